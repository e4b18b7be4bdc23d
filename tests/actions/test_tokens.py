"""API tokens can be listed and revoked (security review finding 2): from the command line,
the API and the tokens page; admins see everyone's, anyone else only their own; a revoked
token is refused at its very next request; the token itself is never shown again."""

import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from dlq.accounts.tokens import create_token
from dlq.models import ApiToken, AuditEntry
from tests.factories import client_for, make_user, post
from tests.uiops import body

pytestmark = pytest.mark.django_db


def bearer(token: str) -> Client:
    return Client(headers={"Authorization": f"Bearer {token}"})


def command(*args) -> str:
    out = StringIO()
    call_command("dlq_token", *args, stdout=out)
    return out.getvalue()


def test_the_command_lists_tokens_without_the_tokens_and_revokes_one_at_once():
    alice, bob = make_user("operator"), make_user("viewer")
    alices = command(alice.username, "--name", "ci").strip()
    bobs = create_token(bob)
    assert bearer(alices).get("/api/v1/queues").status_code == 200

    listed = command("--list")
    assert alice.username in listed and bob.username in listed
    assert alices not in listed and bobs not in listed and alices[:12] in listed
    assert "never" in listed  # bob's token was never used
    only_bob = command("--list", bob.username)
    assert bob.username in only_bob and alice.username not in only_bob

    token_id = ApiToken.objects.get(user=alice).pk
    assert f"revoked token {token_id}" in command("--revoke", str(token_id))
    assert bearer(alices).get("/api/v1/queues").status_code == 401
    assert bearer(bobs).get("/api/v1/queues").status_code == 200
    revoked = AuditEntry.objects.get(action="token_revoke")
    assert revoked.actor_name == "manage.py" and f'"token_id": {token_id}' in revoked.detail
    assert AuditEntry.objects.filter(action="token_create").count() == 1  # the command's


def test_the_command_refuses_an_unknown_token():
    with pytest.raises(CommandError, match="no token 987654"):
        command("--revoke", "987654")


def test_the_api_lists_what_the_caller_may_see():
    admin, viewer = make_user("admin"), make_user("viewer")
    admins, viewers = create_token(admin), create_token(viewer)

    seen = bearer(viewers).get("/api/v1/tokens").json()["results"]
    assert [t["user"] for t in seen] == [viewer.username]
    assert set(seen[0]) == {"id", "user", "name", "prefix", "created_at", "last_used_at"}
    assert seen[0]["last_used_at"] is not None  # this request used it
    everyone = bearer(admins).get("/api/v1/tokens").json()["results"]
    assert {t["user"] for t in everyone} == {admin.username, viewer.username}
    assert admins not in str(everyone) and viewers not in str(everyone)


def test_anyone_revokes_their_own_token_and_only_an_admin_anothers():
    admin, viewer, other = make_user("admin"), make_user("viewer"), make_user("operator")
    admins, viewers, others = create_token(admin), create_token(viewer), create_token(other)
    others_id = ApiToken.objects.get(user=other).pk

    refused = bearer(viewers).delete(f"/api/v1/tokens/{others_id}")
    assert refused.status_code == 404  # not even whether it exists
    assert bearer(others).get("/api/v1/queues").status_code == 200

    assert bearer(admins).delete(f"/api/v1/tokens/{others_id}").status_code == 204
    assert bearer(others).get("/api/v1/queues").status_code == 401  # the next request

    own = ApiToken.objects.get(user=viewer).pk
    assert bearer(viewers).delete(f"/api/v1/tokens/{own}").status_code == 204
    assert bearer(viewers).get("/api/v1/tokens").status_code == 401
    actors = list(AuditEntry.objects.filter(action="token_revoke").values_list("actor_name"))
    assert actors == [(admin.username,), (viewer.username,)]


def test_the_api_needs_credentials():
    assert Client().get("/api/v1/tokens").status_code == 401
    assert Client().delete("/api/v1/tokens/1").status_code == 401


def test_the_page_shows_prefixes_and_revokes_with_csrf():
    admin, viewer = make_user("admin"), make_user("viewer")
    admins, viewers = create_token(admin, "deploy"), create_token(viewer)
    page = body(client_for(viewer).get("/tokens/"))
    assert viewers[:12] in page and viewers not in page and admins[:12] not in page

    browser = client_for(admin)
    page = body(browser.get("/tokens/"))
    assert viewers[:12] in page and admins[:12] in page and "deploy" in page
    assert admins not in page and viewers not in page
    viewer_id = ApiToken.objects.get(user=viewer).pk
    assert Client(enforce_csrf_checks=True).post(f"/tokens/{viewer_id}/revoke/").status_code in (
        302,
        403,
    )
    assert bearer(viewers).get("/api/v1/queues").status_code == 200  # nothing without CSRF

    done = post(browser, f"/tokens/{viewer_id}/revoke/", follow=True)
    assert re.search(r"Token dlq_\S+… of \S+ revoked", body(done))
    assert bearer(viewers).get("/api/v1/queues").status_code == 401


def test_a_viewer_cannot_revoke_anothers_token_from_the_page():
    viewer, other = make_user("viewer"), make_user("operator")
    others = create_token(other)
    browser = client_for(viewer)
    browser.get("/tokens/")  # the CSRF cookie
    done = post(browser, f"/tokens/{ApiToken.objects.get(user=other).pk}/revoke/", follow=True)
    assert "There is no token" in body(done)
    assert bearer(others).get("/api/v1/queues").status_code == 200
