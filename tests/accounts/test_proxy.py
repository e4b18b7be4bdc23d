"""Signing in behind a trusted reverse proxy: its headers count only from its networks, name
a user of their own (never a local one), map groups to a role at each sign-in, and refuse a
user with no mapped group (403, audited once)."""

import pytest
from django.test import Client

from dlq.accounts.tokens import create_token
from dlq.models import AuditEntry, Identity
from tests.factories import make_user

pytestmark = pytest.mark.django_db
PROXY = "10.1.2.3"


@pytest.fixture(autouse=True)
def proxy(settings):
    settings.DLQ_AUTH_PROXY_USER_HEADER = "HTTP_X_FORWARDED_USER"
    settings.DLQ_AUTH_PROXY_GROUPS_HEADER = "HTTP_X_FORWARDED_GROUPS"
    settings.DLQ_AUTH_PROXY_ROLE_MAP = {"dlq-ops": "operator", "dlq-view": "viewer",
                                        "platform": "admin"}  # fmt: skip
    import ipaddress

    settings.DLQ_AUTH_PROXY_NETS = [ipaddress.ip_network("10.1.0.0/16")]


def via(address=PROXY, user="alice", groups="dlq-ops", client=None, path="/"):
    client = client or Client(REMOTE_ADDR=address)
    headers = {"X-Forwarded-User": user, "X-Forwarded-Groups": groups} if user else {}
    return client, client.get(path, headers=headers, REMOTE_ADDR=address)


def test_the_proxy_signs_a_user_in_with_the_role_of_their_groups():
    client, response = via(groups="other, dlq-view ,dlq-ops")
    assert response.status_code == 200
    assert 'class="role">operator<' in response.content.decode()
    identity = Identity.objects.get()
    assert (identity.source, identity.subject, identity.role) == ("proxy", "alice", "operator")
    entry = AuditEntry.objects.get()
    assert entry.action == "sign_in" and entry.actor_name == "alice"
    assert '"via": "proxy"' in entry.detail and '"address": "10.1.2.3"' in entry.detail
    _, again = via(client=client, groups="dlq-ops,other,dlq-view")  # same groups, any order
    assert again.status_code == 200 and AuditEntry.objects.count() == 1  # one sign-in


def test_headers_from_anywhere_else_are_ignored():
    _, response = via(address="192.0.2.9", groups="platform")
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert not Identity.objects.exists() and not AuditEntry.objects.exists()


def test_a_proxy_user_named_like_a_local_user_is_not_that_user():
    local = make_user("admin")
    _, response = via(user=local.username, groups="dlq-view")
    assert 'class="role">viewer<' in response.content.decode()
    identity = Identity.objects.get()
    assert identity.user != local and identity.user.username == f"{local.username}~proxy"


def test_a_user_whose_groups_map_to_no_role_is_refused_and_audited_once():
    client, response = via(groups="marketing")
    assert response.status_code == 403
    page = response.content.decode()
    assert "none of your" in page and "marketing" in page
    via(client=client, groups="marketing")
    assert list(AuditEntry.objects.values_list("action", flat=True)) == ["sign_in_refused"]
    assert not Identity.objects.exists()  # no user is made for a refusal


def test_new_groups_are_a_new_sign_in_and_losing_the_role_stops_the_users_tokens():
    client, _ = via(groups="platform")
    user = Identity.objects.get().user
    token = Client(headers={"Authorization": f"Bearer {create_token(user)}"})
    assert token.get("/api/v1/queues").status_code == 200

    _, demoted = via(client=client, groups="dlq-view")
    assert 'class="role">viewer<' in demoted.content.decode()
    _, refused = via(client=client, groups="")
    assert refused.status_code == 403
    assert token.get("/api/v1/queues").status_code == 403
    actions = list(AuditEntry.objects.order_by("id").values_list("action", flat=True))
    assert actions == ["sign_in", "sign_in", "sign_in_refused"]


def test_a_proxy_session_ends_without_the_headers_or_off_the_proxy():
    client, _ = via()
    _, bare = via(client=client, user="")
    assert bare.status_code == 302  # the proxy no longer vouches: signed out
    client, _ = via()
    _, outside = via(client=client, address="192.0.2.9", user="")
    assert outside.status_code == 302  # a session cookie carried past the proxy is not enough


def test_another_user_in_the_headers_replaces_the_session():
    client, _ = via(user="alice", groups="platform")
    _, response = via(client=client, user="bob", groups="dlq-view")
    page = response.content.decode()
    assert "bob" in page and 'class="role">viewer<' in page
    assert Identity.objects.count() == 2


def test_headers_name_hostile_text_that_stays_text():
    _, response = via(user="<script>alert(1)</script>", groups="<b>x</b>")
    page = response.content.decode()
    assert response.status_code == 403
    assert "<script>alert(1)" not in page and "&lt;script&gt;" in page and "<b>x</b>" not in page


def test_a_groups_header_too_long_to_read_whole_grants_nothing():
    groups = ",".join(f"team-{n:05d}" for n in range(7000)) + ",platform"
    _, response = via(groups=groups)
    assert len(groups) > 65536 and response.status_code == 403


def test_a_user_header_with_a_nul_is_no_user():
    _, response = via(user="ali\x00ce", groups="platform")
    assert response.status_code == 302 and not Identity.objects.exists()


def test_switching_the_proxy_off_ends_its_sessions(settings):
    client, _ = via(groups="platform")
    settings.DLQ_AUTH_PROXY_USER_HEADER = ""
    assert client.get("/", REMOTE_ADDR="192.0.2.9").status_code == 302


def test_a_linked_user_made_superuser_is_not_one_after_the_next_sign_in():
    client, _ = via(groups="dlq-view")
    user = Identity.objects.get().user
    user.is_superuser = True
    user.save()
    token = Client(headers={"Authorization": f"Bearer {create_token(user)}"})
    via(client=client, groups="marketing")
    user.refresh_from_db()
    assert not user.is_superuser and token.get("/api/v1/queues").status_code == 403


def test_a_deactivated_user_is_told_so():
    client, _ = via(groups="platform")
    Identity.objects.get().user.__class__.objects.update(is_active=False)
    _, response = via(client=client, groups="platform,dlq-view")
    assert response.status_code == 403 and "disabled" in response.content.decode()
    assert AuditEntry.objects.order_by("id").last().action == "sign_in_refused"
