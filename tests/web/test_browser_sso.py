"""Signing in through a real OpenID Connect provider (tests/idp: django-oidc-provider on a
loopback port), walked in headless Chromium: the role from the provider's groups, a user
with no mapped group refused, roles re-evaluated at the next sign-in (and a demoted user's
API token refused), logout at the provider too, a tampered state or nonce refused, an
expired session."""

import json
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest
from django.contrib.sessions.models import Session
from django.test import Client

from dlq.accounts.tokens import create_token
from dlq.models import AuditEntry, Identity
from tests.browser import screenshot

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

CLIENT_ID, SECRET = "dlq-console", "s3cret-for-the-console"
PASSWORD = "idp-password-1"
ROLE_MAP = {"dlq-viewers": "viewer", "dlq-operators": "operator", "platform": "admin"}


@pytest.fixture
def sso(idp, live_server, settings):
    idp.add_client(CLIENT_ID, SECRET, [f"{live_server.url}/login/sso/callback/"],
                   [f"{live_server.url}/login/"])  # fmt: skip
    settings.DLQ_CONSOLE_URL = live_server.url
    settings.DLQ_OIDC_DISCOVERY_URL = idp.discovery_url
    settings.DLQ_OIDC_CLIENT_ID = CLIENT_ID
    settings.DLQ_OIDC_CLIENT_SECRET = SECRET
    settings.DLQ_OIDC_ROLE_MAP = ROLE_MAP
    return idp


def person(idp, username: str, groups: list[str], name: str = "") -> None:
    idp.add_user(username, PASSWORD, name or username.title(), f"{username}@example.com", groups)


def start_sign_in(page, live_server, path: str = "/") -> None:
    page.goto(f"{live_server.url}{path}")
    page.get_by_role("link", name="Sign in with 127.0.0.1").click()


def at_provider(page, username: str) -> None:
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def role_shown(page) -> str:
    return page.locator(".who .role").inner_text()


def test_a_user_signs_in_with_the_role_their_groups_map_to(sso, page, live_server):
    person(sso, "olivia", ["staff", "dlq-operators", "dlq-viewers"], name="Olivia <Ops>")
    start_sign_in(page, live_server, "/messages/?status=parked")
    assert page.url.startswith(sso.url)  # at the provider, asked who they are
    authorize = dict(parse_qsl(dict(parse_qsl(urlsplit(page.url).query))["next"].split("?")[1]))
    assert authorize["code_challenge_method"] == "S256" and len(authorize["code_challenge"]) == 43
    at_provider(page, "olivia")

    page.wait_for_url(f"{live_server.url}/messages/?status=parked")  # back where they were
    assert role_shown(page) == "operator"
    identity = Identity.objects.get()
    assert identity.issuer == sso.issuer and identity.role == "operator"
    assert not identity.user.has_usable_password() and not identity.user.is_superuser
    entry = AuditEntry.objects.get(action="sign_in")
    detail = json.loads(entry.detail)
    assert entry.actor_name == identity.user.username == "olivia"
    assert (detail["via"], detail["subject"], detail["name"]) == ("oidc", identity.subject,
                                                                  "Olivia <Ops>")  # fmt: skip
    page.goto(f"{live_server.url}/audit/")
    assert "Olivia <Ops>" in page.content().replace("&lt;", "<").replace("&gt;", ">")
    assert page.locator("text=Olivia <Ops>").count() >= 1  # shown as text, not markup


def test_a_user_whose_groups_map_to_no_role_is_refused(sso, page, live_server):
    person(sso, "mallory", ["marketing", "<img src=x onerror=alert(1)>"])
    start_sign_in(page, live_server)
    with page.expect_response(lambda r: "/login/sso/callback/" in r.url) as answer:
        at_provider(page, "mallory")

    assert answer.value.status == 403
    assert page.get_by_role("heading").inner_text() == "No access to DLQ Console"
    assert page.locator("ul.groups li").all_inner_texts() == [
        "<img src=x onerror=alert(1)>", "marketing"]  # fmt: skip
    screenshot(page, "sso-refused")
    page.goto(f"{live_server.url}/")
    assert page.url.startswith(f"{live_server.url}/login/")  # not a viewer by default
    assert not Identity.objects.exists()
    assert AuditEntry.objects.get().action == "sign_in_refused"


def test_roles_follow_the_provider_at_the_next_sign_in_and_a_lost_role_stops_tokens(
    sso, page, live_server
):
    person(sso, "ada", ["platform"])
    start_sign_in(page, live_server)
    at_provider(page, "ada")
    page.wait_for_url(f"{live_server.url}/")
    assert role_shown(page) == "admin"
    token = Client(headers={"Authorization": f"Bearer {create_token(Identity.objects.get().user)}"})
    assert token.get("/api/v1/queues").status_code == 200

    sso.set_groups("ada", ["dlq-viewers"])
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{live_server.url}/login/")
    start_sign_in(page, live_server)
    at_provider(page, "ada")
    page.wait_for_url(f"{live_server.url}/")
    assert role_shown(page) == "viewer"
    assert token.get("/api/v1/queues").status_code == 200  # a viewer may read queues

    sso.set_groups("ada", ["alumni"])
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{live_server.url}/login/")
    start_sign_in(page, live_server)
    at_provider(page, "ada")
    assert page.get_by_role("heading").inner_text() == "No access to DLQ Console"
    assert token.get("/api/v1/queues").status_code == 403  # the token acts with no role now
    actions = list(AuditEntry.objects.order_by("id").values_list("action", flat=True))
    assert actions == ["sign_in", "sign_in", "sign_in_refused"]


def test_logout_also_ends_the_providers_session(sso, page, live_server):
    person(sso, "vic", ["dlq-viewers"])
    start_sign_in(page, live_server)
    at_provider(page, "vic")
    page.wait_for_url(f"{live_server.url}/")

    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(f"{live_server.url}/login/")  # through the provider's end-session
    page.goto(f"{live_server.url}/")
    assert page.url.startswith(f"{live_server.url}/login/")
    start_sign_in(page, live_server)
    assert page.get_by_label("Password").is_visible()  # the provider asks again


def test_an_expired_session_signs_in_again_through_the_provider(sso, page, live_server):
    person(sso, "eve", ["dlq-operators"])
    start_sign_in(page, live_server)
    at_provider(page, "eve")
    page.wait_for_url(f"{live_server.url}/")
    Session.objects.update(expire_date=datetime.now(UTC) - timedelta(seconds=1))

    page.goto(f"{live_server.url}/messages/")
    assert page.url.startswith(f"{live_server.url}/login/")
    page.get_by_role("link", name="Sign in with 127.0.0.1").click()  # still signed in there
    page.wait_for_url(f"{live_server.url}/messages/")
    assert role_shown(page) == "operator"
    assert AuditEntry.objects.filter(action="sign_in").count() == 2


def _with_param(url: str, name: str, value: str) -> str:
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query[name] = value
    return urlunsplit(parts._replace(query=urlencode(query)))


def tamper(page, name: str, value: str) -> None:
    """Change one parameter of the console's authorization request on its way to the
    provider: the provider's login page holds that request in `next`, and the provider
    acts on whatever arrives there."""
    login_url = page.url
    authorize = dict(parse_qsl(urlsplit(login_url).query))["next"]
    page.goto(_with_param(login_url, "next", _with_param(authorize, name, value)))


def test_a_tampered_state_is_refused(sso, page, live_server):
    person(sso, "tom", ["platform"])
    start_sign_in(page, live_server)
    tamper(page, "state", "forged-state")
    with page.expect_response(lambda r: "/login/sso/callback/" in r.url) as answer:
        at_provider(page, "tom")

    assert answer.value.status == 400
    assert page.get_by_role("heading").inner_text() == "Sign-in failed"
    assert "MismatchingStateError" in page.locator("code").first.inner_text()
    page.goto(f"{live_server.url}/")
    assert page.url.startswith(f"{live_server.url}/login/")
    assert not Identity.objects.exists()
    assert AuditEntry.objects.get().action == "sign_in_failed"


def test_a_tampered_nonce_is_refused(sso, page, live_server):
    """The nonce changed on its way to the provider: the provider signs an ID token with
    the forged nonce, and the console, which kept its own, refuses it."""
    person(sso, "nina", ["platform"])
    start_sign_in(page, live_server)
    tamper(page, "nonce", "forged-nonce")
    with page.expect_response(lambda r: "/login/sso/callback/" in r.url) as answer:
        at_provider(page, "nina")

    assert answer.value.status == 400
    assert "nonce" in page.locator("code").first.inner_text().lower()
    page.goto(f"{live_server.url}/")
    assert page.url.startswith(f"{live_server.url}/login/")
    assert not Identity.objects.exists()


def test_a_tampered_pkce_challenge_is_refused(sso, page, live_server):
    """PKCE: a code obtained for another challenge is worthless with the console's
    verifier; the provider refuses the exchange and the console says so."""
    person(sso, "pat", ["platform"])
    start_sign_in(page, live_server)
    tamper(page, "code_challenge", "A" * 43)
    with page.expect_response(lambda r: "/login/sso/callback/" in r.url) as answer:
        at_provider(page, "pat")

    assert answer.value.status == 400
    assert "invalid_grant" in page.locator("code").first.inner_text()
    assert not Identity.objects.exists()


def test_groups_only_in_userinfo_are_read_there(sso, page, live_server, settings):
    settings.DLQ_OIDC_SCOPES = "openid email profile groups"
    sso.set_groups_in_id_token(False)
    person(sso, "uma", ["dlq-operators"])
    start_sign_in(page, live_server)
    at_provider(page, "uma")
    page.wait_for_url(f"{live_server.url}/")
    assert role_shown(page) == "operator"


def test_with_local_passwords_off_the_login_page_offers_only_the_provider(
    sso, page, live_server, settings
):
    settings.DLQ_LOCAL_LOGIN = False
    page.goto(f"{live_server.url}/login/")
    assert page.get_by_role("link", name="Sign in with 127.0.0.1").is_visible()
    assert page.get_by_label("Password").count() == 0
