"""The test IdP itself (tests/idp/), driven by hand with requests: no browser, no console."""

import base64
import hashlib
import html
import re
import secrets
from urllib.parse import parse_qs, urljoin, urlsplit

import jwt
import pytest
import requests

CLIENT, SECRET = "console", "s3cret"
REDIRECT = "http://localhost:1/cb"  # never followed: the code is read off the Location header
LOGGED_OUT = "http://localhost:1/logged-out"


@pytest.fixture
def provider(idp):
    idp.add_client(CLIENT, SECRET, [REDIRECT], [LOGGED_OUT])
    idp.add_user("ada", "pw-ada", "Ada Lovelace", "ada@example.com", ["dlq-operators"])
    idp.config = requests.get(idp.discovery_url, timeout=10).json()
    return idp


def authorize(idp, session, scope="openid profile email groups", verifier=None, password=None):
    """The authorization request, signing in with `password` when the IdP asks; returns
    (code, nonce)."""
    verifier = verifier or secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
    state, nonce = secrets.token_urlsafe(8), secrets.token_urlsafe(8)
    params = {
        "client_id": CLIENT,
        "response_type": "code",
        "redirect_uri": REDIRECT,
        "scope": scope,
        "state": state,
        "nonce": nonce,
        "code_challenge": challenge.rstrip(b"=").decode(),
        "code_challenge_method": "S256",
    }
    r = session.get(idp.config["authorization_endpoint"], params=params, allow_redirects=False)
    assert r.status_code == 302, r.text
    if urlsplit(r.headers["Location"]).path == "/accounts/login/":
        assert password, "the IdP asked for a password"
        login = session.get(urljoin(idp.url, r.headers["Location"]))
        hidden = re.findall(r'name="(csrfmiddlewaretoken|next)" value="([^"]*)"', login.text)
        form = {name: html.unescape(value) for name, value in hidden}
        form |= {"username": "ada", "password": password}
        r = session.post(login.url, data=form, allow_redirects=False)
        assert r.status_code == 302, r.text  # back to the authorization request
        r = session.get(urljoin(idp.url, r.headers["Location"]), allow_redirects=False)
    location = r.headers["Location"]
    assert location.startswith(REDIRECT + "?"), location
    query = parse_qs(urlsplit(location).query)
    assert query["state"] == [state]
    return query["code"][0], nonce


def token(idp, code, verifier):
    return requests.post(
        idp.config["token_endpoint"],
        data={
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": REDIRECT,
            "code_verifier": verifier,
        },
        auth=(CLIENT, SECRET),
        timeout=10,
    )


def sign_in(idp, session, scope="openid profile email groups", password="pw-ada"):
    """A whole code flow with PKCE: (verified ID token claims, token response)."""
    verifier = secrets.token_urlsafe(48)
    code, nonce = authorize(idp, session, scope, verifier, password)
    r = token(idp, code, verifier)
    assert r.status_code == 200, r.text
    tokens = r.json()
    key = jwt.PyJWKClient(idp.config["jwks_uri"]).get_signing_key_from_jwt(tokens["id_token"])
    claims = jwt.decode(
        tokens["id_token"], key, algorithms=["RS256"], audience=CLIENT, issuer=idp.issuer
    )
    assert claims["nonce"] == nonce
    return claims, tokens


def userinfo(idp, tokens):
    headers = {"Authorization": f"Bearer {tokens['access_token']}"}
    return requests.get(idp.config["userinfo_endpoint"], headers=headers, timeout=10).json()


def test_discovery(idp):
    config = requests.get(idp.discovery_url, timeout=10).json()
    assert config["issuer"] == idp.issuer == f"{idp.url}/openid"
    for endpoint in ("authorization", "token", "userinfo", "end_session"):
        assert config[f"{endpoint}_endpoint"].startswith(f"{idp.url}/openid/")
    assert config["jwks_uri"] == f"{idp.url}/openid/jwks"
    assert "RS256" in config["id_token_signing_alg_values_supported"]


def test_code_flow_with_pkce(provider):
    session = requests.Session()
    claims, tokens = sign_in(provider, session)
    assert claims["groups"] == ["dlq-operators"]
    assert claims["name"] == "Ada Lovelace"
    assert claims["email"] == "ada@example.com"
    assert claims["preferred_username"] == "ada"
    info = userinfo(provider, tokens)
    assert info["sub"] == claims["sub"]
    assert info["groups"] == ["dlq-operators"]
    assert info["preferred_username"] == "ada"

    # Signed in at the IdP now: no password this time. Without the scope `groups`, the ID
    # token still has them, and userinfo does not.
    claims, tokens = sign_in(provider, session, scope="openid profile", password=None)
    assert claims["groups"] == ["dlq-operators"]
    assert "email" not in claims
    assert "groups" not in userinfo(provider, tokens)


def test_wrong_code_verifier_refused(provider):
    code, _ = authorize(provider, requests.Session(), verifier="right" * 10, password="pw-ada")
    r = token(provider, code, "wrong" * 10)
    assert r.status_code == 400
    assert r.json()["error"] == "invalid_grant"


def test_wrong_password_refused(provider):
    with pytest.raises(AssertionError, match="Wrong username or password"):
        authorize(provider, requests.Session(), password="nope")


def test_groups_follow_the_directory(provider):
    session = requests.Session()
    assert sign_in(provider, session)[0]["groups"] == ["dlq-operators"]
    provider.set_groups("ada", ["dlq-admins", "dlq-viewers"])
    assert sign_in(provider, session, password=None)[0]["groups"] == ["dlq-admins", "dlq-viewers"]
    provider.set_groups("ada", [])
    assert sign_in(provider, session, password=None)[0]["groups"] == []


def test_groups_only_in_userinfo(provider):
    provider.set_groups_in_id_token(False)
    claims, tokens = sign_in(provider, requests.Session())
    assert "groups" not in claims
    assert userinfo(provider, tokens)["groups"] == ["dlq-operators"]


def test_end_session_signs_out_of_the_idp(provider):
    session = requests.Session()
    _, tokens = sign_in(provider, session)
    r = session.get(
        provider.config["end_session_endpoint"],
        params={"id_token_hint": tokens["id_token"], "post_logout_redirect_uri": LOGGED_OUT},
        allow_redirects=False,
    )
    assert r.status_code == 302
    assert r.headers["Location"] == LOGGED_OUT
    with pytest.raises(AssertionError, match="asked for a password"):
        authorize(provider, session)  # signed out: the password again
    sign_in(provider, session)
