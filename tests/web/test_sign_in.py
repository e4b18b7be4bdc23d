"""Failed sign-ins are throttled per account and per client address, answered plainly,
logged and audited; successful sign-ins are audited too (security review finding 1)."""

import time
from datetime import timedelta

import pytest
from django.test import Client

from dlq.models import AuditEntry
from tests.factories import make_user

pytestmark = pytest.mark.django_db
PASSWORD = "the-right-password-1"


def sign_in(username: str, password: str, address: str = "203.0.113.7"):
    client = Client(REMOTE_ADDR=address)
    return client, client.post("/login/", {"username": username, "password": password})


def actions() -> list[str]:
    return list(AuditEntry.objects.order_by("id").values_list("action", flat=True))


def test_a_success_is_audited_with_the_address():
    user = make_user("viewer", password=PASSWORD)
    client, response = sign_in(user.username, PASSWORD)
    assert response.status_code == 302 and client.get("/").status_code == 200
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.actor_name, entry.actor_id) == ("sign_in", user.username, user.pk)
    assert '"address": "203.0.113.7"' in entry.detail


def test_an_account_is_locked_after_the_limit_even_for_the_right_password(settings, caplog):
    settings.AXES_FAILURE_LIMIT = 3
    user = make_user("admin", password=PASSWORD)
    for attempt in range(2):  # from other addresses each time: the account is what counts
        _, response = sign_in(user.username, "guess", f"198.51.100.{attempt}")
        assert response.status_code == 200 and "did not match" in response.content.decode()
    _, third = sign_in(user.username, "guess", "198.51.100.2")
    assert third.status_code == 429  # the failure that reaches the limit is refused so

    _, locked = sign_in(user.username, PASSWORD, "198.51.100.9")

    assert locked.status_code == 429
    assert "Too many failed sign-ins" in locked.content.decode()
    assert actions() == ["sign_in_failed"] * 2 + ["sign_in_locked"] * 2  # one row an attempt
    assert set(AuditEntry.objects.values_list("actor_name", flat=True)) == {user.username}
    assert "login failure" in caplog.text.lower()
    assert PASSWORD not in caplog.text and "guess" not in caplog.text


def test_an_address_is_locked_after_the_limit_whatever_the_account(settings):
    settings.AXES_FAILURE_LIMIT = 3
    victim = make_user("operator", password=PASSWORD)
    for name in ("alice", "bob", "carol"):
        sign_in(name, "guess", "192.0.2.50")

    _, locked = sign_in(victim.username, PASSWORD, "192.0.2.50")
    assert locked.status_code == 429
    _, elsewhere = sign_in(victim.username, PASSWORD, "192.0.2.51")
    assert elsewhere.status_code == 302  # the account itself was not attacked


def test_the_lock_lifts_after_the_cool_off(settings):
    settings.AXES_FAILURE_LIMIT = 2
    settings.AXES_COOLOFF_TIME = timedelta(seconds=1)
    user = make_user("viewer", password=PASSWORD)
    sign_in(user.username, "guess")
    sign_in(user.username, "guess")
    assert sign_in(user.username, PASSWORD)[1].status_code == 429
    time.sleep(1.2)
    assert sign_in(user.username, PASSWORD)[1].status_code == 302


def test_a_success_from_the_same_address_does_not_wipe_the_count(settings):
    """Otherwise anyone with an account could guess at another one's password for ever,
    signing in between guesses."""
    settings.AXES_FAILURE_LIMIT = 3
    admin, viewer = make_user("admin", password=PASSWORD), make_user("viewer", password=PASSWORD)
    for _ in range(2):
        sign_in(admin.username, "guess", "198.51.100.20")
        assert sign_in(viewer.username, PASSWORD, "198.51.100.20")[1].status_code == 302
    _, third = sign_in(admin.username, "guess", "198.51.100.20")
    assert third.status_code == 429
    assert sign_in(admin.username, PASSWORD, "198.51.100.21")[1].status_code == 429


def test_a_typed_user_name_is_kept_as_text():
    hostile = "<script>alert(1)</script>" + "x" * 300
    sign_in(hostile, "guess")
    entry = AuditEntry.objects.get(action="sign_in_failed")
    assert entry.actor_name == hostile[:150] and entry.actor_id is None


def test_a_user_name_with_nul_is_one_more_failure_not_an_error():
    _, response = sign_in("ad\x00min", "guess")
    assert response.status_code == 200
    assert AuditEntry.objects.get().actor_name == "ad\ufffdmin"


def test_the_admin_login_form_sends_everyone_to_the_consoles(client):
    user = make_user("viewer", password=PASSWORD)
    client.force_login(user)
    answer = client.post("/admin/login/?next=/admin/", {"username": "x", "password": "y"})
    assert answer.status_code == 302 and answer["Location"] == "/login/?next=/admin/"
    assert not AuditEntry.objects.exists()  # nothing was tried there
