"""Single sign-on's edges, without a browser: a provider that is down or whose discovery
document speaks for another issuer, the provider's own error, OIDC off, local passwords off."""

import socket

import pytest
from django.test import Client

from dlq.models import AuditEntry
from tests.factories import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def configured(settings):
    settings.DLQ_OIDC_CLIENT_ID = "dlq-console"
    settings.DLQ_OIDC_CLIENT_SECRET = "secret"
    settings.DLQ_OIDC_ROLE_MAP = {"ops": "operator"}
    return settings


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_provider_that_is_down_gets_a_page_that_says_so(configured):
    port = closed_port()
    configured.DLQ_OIDC_DISCOVERY_URL = f"http://127.0.0.1:{port}/.well-known/openid-configuration"
    response = Client().get("/login/sso/")
    assert response.status_code == 502
    page = response.content.decode()
    assert "Sign-in failed" in page and "cannot read the discovery document" in page
    entry = AuditEntry.objects.get()
    assert entry.action == "sign_in_failed" and '"via": "oidc"' in entry.detail


def test_a_discovery_document_for_another_issuer_is_refused(configured, idp):
    # The same provider under another name: its document names 127.0.0.1, not localhost.
    configured.DLQ_OIDC_DISCOVERY_URL = idp.discovery_url.replace("127.0.0.1", "localhost")
    response = Client().get("/login/sso/")
    assert response.status_code == 502
    assert "names another issuer" in response.content.decode()
    assert "expected" in AuditEntry.objects.get().detail  # the whole story for the admins


def test_the_sign_in_starts_at_the_provider_with_pkce_and_a_safe_next(configured, idp):
    configured.DLQ_OIDC_DISCOVERY_URL = idp.discovery_url
    client = Client()
    response = client.get("/login/sso/", {"next": "https://evil.example/"})
    assert response.status_code == 302 and response["Location"].startswith(f"{idp.url}/openid/")
    assert "code_challenge_method=S256" in response["Location"]
    assert "dlq_sso_next" not in client.session  # an off-site next is dropped


def test_the_providers_own_error_is_a_clear_page(configured, idp):
    configured.DLQ_OIDC_DISCOVERY_URL = idp.discovery_url
    client = Client()
    client.get("/login/sso/")
    response = client.get(
        "/login/sso/callback/", {"error": "access_denied", "error_description": "<b>no</b>"}
    )
    assert response.status_code == 400
    page = response.content.decode()
    assert "access_denied" in page and "<b>no</b>" not in page


def test_without_oidc_the_sso_addresses_are_not_found():
    assert Client().get("/login/sso/").status_code == 404
    assert Client().get("/login/sso/callback/?code=x&state=y").status_code == 404
    assert "Sign in with" not in Client().get("/login/").content.decode()


def test_logout_is_a_post_with_the_csrf_token():
    assert Client().get("/logout/").status_code == 405
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("viewer"))
    assert client.post("/logout/").status_code == 403
    assert client.get("/").status_code == 200  # still signed in


@pytest.mark.parametrize(
    ("claims", "complaint"),
    [
        ({"sub": "x" * 256}, "no usable subject"),
        ({"sub": 42}, "no usable subject"),
        ({"sub": "a\x00b"}, "no usable subject"),
        ({}, "no usable subject"),
    ],
)
def test_an_id_token_without_a_usable_subject_is_refused(configured, claims, complaint):
    from dlq.accounts import oidc

    with pytest.raises(oidc.ProviderError, match=complaint):
        oidc.claims_from({"userinfo": {**claims, "groups": []}})


def test_hostile_claims_are_read_as_bounded_clean_text(configured):
    from dlq.accounts import oidc

    claims = oidc.claims_from({"userinfo": {
        "sub": "s-1", "iss": "https://idp.example", "name": "Eve\x00<b>" + "x" * 500,
        "preferred_username": ["not", "text"], "email": "eve@example.com",
        "groups": {"ops": True}}})  # fmt: skip
    assert claims.display_name.startswith("Eve\ufffd<b>") and len(claims.display_name) == 255
    assert claims.username == "eve@example.com" and claims.groups == []


def test_with_local_passwords_off_a_password_is_refused_and_old_sessions_end(settings):
    user = make_user("admin", password="the-right-password-1")
    old = Client()
    assert (
        old.post(
            "/login/", {"username": user.username, "password": "the-right-password-1"}
        ).status_code
        == 302
    )
    settings.DLQ_LOCAL_LOGIN = False

    response = Client().post(
        "/login/", {"username": user.username, "password": "the-right-password-1"}
    )
    assert response.status_code == 403
    assert "switched off" in response.content.decode()
    assert old.get("/").status_code == 302  # the password session is over


def test_the_pages_let_log_out_reach_the_provider_and_nothing_else(configured):
    from dlq.accounts import oidc

    configured.DLQ_OIDC_DISCOVERY_URL = (
        "https://user:pw@sso.example.com:8443/realms/ops/.well-known/openid-configuration"
    )
    policy = Client().get("/login/")["Content-Security-Policy"]
    assert "form-action 'self' https://sso.example.com:8443;" in policy
    assert oidc.provider_host() == "sso.example.com:8443"  # no credentials on the page
