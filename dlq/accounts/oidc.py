"""Signing in through an OpenID Connect provider: the authorization code flow with PKCE, by
Authlib's Django client.

Authlib keeps state, nonce and the PKCE verifier in the session, and validates the ID token
whole (signature against the provider's keys, issuer, audience, expiry, nonce). What is ours:
the configuration from DLQ_OIDC_*, reading the discovery document (checked: it must speak
for the issuer it was fetched from), and reading the claims a sign-in needs
(dlq/accounts/external.py decides what they grant).

The checked document lives in one immutable snapshot per configuration, replaced whole
when it is an hour old: a request never sees a half-cleared cache, and every reload is
checked again.
"""

import threading
import time
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit

import requests
from authlib.integrations.django_client import OAuth
from django.conf import settings

from dlq.accounts import rolemap
from dlq.text import clean

TIMEOUT = 10  # seconds for each request to the provider: a sign-in waits on it
METADATA_MAX_AGE = 3600  # re-read the discovery document (and the keys) after this long
WELL_KNOWN = "/.well-known/openid-configuration"
SUBJECT_LIMIT = 255  # OpenID Connect Core 2: "MUST NOT exceed 255 ASCII characters"

_lock = threading.Lock()
_current: "_Snapshot | None" = None


class ProviderError(Exception):
    """The provider could not be used. `str()` is safe to show anyone; `detail` is for the
    log and the audit row."""

    def __init__(self, public: str, detail: str = ""):
        super().__init__(public)
        self.detail = detail or public


@dataclass(frozen=True)
class _Snapshot:
    key: tuple
    app: object  # Authlib's client, its server_metadata the checked document
    loaded_at: float


@dataclass(frozen=True)
class Claims:
    issuer: str
    subject: str
    username: str  # a hint for a new user's name: preferred_username, e-mail or subject
    display_name: str
    groups: list[str]


def enabled() -> bool:
    return bool(settings.DLQ_OIDC_DISCOVERY_URL)


def provider_host() -> str:
    """What the login page's button names: the provider's host, from the configuration
    alone (the page never waits on the provider)."""
    parts = urlsplit(settings.DLQ_OIDC_DISCOVERY_URL)
    port = _port(parts)
    return f"{parts.hostname}:{port}" if port else str(parts.hostname)


def client():
    """Authlib's client for the configured provider, with a checked discovery document:
    read on first use, again after METADATA_MAX_AGE, and whenever the settings change."""
    global _current
    key = _key()
    snapshot = _current
    if snapshot and snapshot.key == key and time.time() - snapshot.loaded_at < METADATA_MAX_AGE:
        return snapshot.app
    with _lock:
        if _current is snapshot:  # no other thread has replaced it meanwhile
            _current = _Snapshot(key, _new_client(key, _discover()), time.time())
        return _current.app


def metadata() -> dict:
    return client().server_metadata


def known_metadata() -> dict:
    """The checked document if one was read already; never fetches (for the CSP header)."""
    snapshot = _current
    return snapshot.app.server_metadata if snapshot and snapshot.key == _key() else {}


def _key() -> tuple:
    return (
        settings.DLQ_OIDC_DISCOVERY_URL,
        settings.DLQ_OIDC_CLIENT_ID,
        settings.DLQ_OIDC_CLIENT_SECRET,
        settings.DLQ_OIDC_SCOPES,
    )


def _discover() -> dict:
    url = settings.DLQ_OIDC_DISCOVERY_URL
    try:
        response = requests.get(url, timeout=TIMEOUT, allow_redirects=False)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as e:
        raise ProviderError("cannot read the discovery document", _short(e)) from None
    if not isinstance(document, dict):
        raise ProviderError("the discovery document is not a JSON object")
    issuer = document.get("issuer")
    expected = url.removesuffix(WELL_KNOWN).rstrip("/")
    if not isinstance(issuer, str) or issuer.rstrip("/") != expected:
        raise ProviderError("the discovery document names another issuer",
                            f"issuer {str(issuer)[:200]!r}, expected {expected!r}")  # fmt: skip
    for endpoint in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        if not _is_url(document.get(endpoint)):
            raise ProviderError(f"the discovery document has no {endpoint}")
    return document


def _new_client(key: tuple, document: dict):
    discovery_url, client_id, secret, scopes = key
    app = OAuth().register(
        "idp",
        client_id=client_id,
        client_secret=secret,
        client_kwargs={
            "scope": scopes,
            "code_challenge_method": "S256",
            "default_timeout": TIMEOUT,
        },  # fmt: skip
    )
    app.server_metadata = dict(document)  # no server_metadata_url: Authlib never refetches
    return app


def claims_from(token: dict) -> Claims:
    """The claims of a validated token response: the ID token's, completed from the userinfo
    endpoint when the ID token lacks the groups claim (as many providers do by default)."""
    found = dict(token.get("userinfo") or {})
    subject = found.get("sub")
    if (
        not isinstance(subject, str)
        or not 0 < len(subject) <= SUBJECT_LIMIT
        or (clean(subject) != subject)
    ):
        raise ProviderError("the ID token has no usable subject (sub)")
    claim = settings.DLQ_OIDC_GROUPS_CLAIM
    if claim not in found and _is_url(metadata().get("userinfo_endpoint")):
        try:
            extra = client().userinfo(token=token)
        except Exception as e:  # requests' and Authlib's errors alike
            raise ProviderError("cannot read userinfo", _short(e)) from None
        if extra.get("sub") != subject:  # OpenID Connect Core 5.3.2
            raise ProviderError("userinfo names another subject than the ID token")
        found = {**extra, **found}
    return Claims(
        issuer=str(found.get("iss", "")),
        subject=subject,
        username=_text(found.get("preferred_username")) or _text(found.get("email")) or subject,
        display_name=_text(found.get("name")),
        groups=rolemap.groups_from(found.get(claim)),
    )


def logout_url(id_token: str, back: str) -> str | None:
    """The provider's end-session URL (RP-initiated logout), or None if it has none or
    cannot be reached: signing out of the console must work whatever the provider does."""
    try:
        endpoint = metadata().get("end_session_endpoint")
    except ProviderError:
        return None
    if not _is_url(endpoint):
        return None
    params = {"client_id": settings.DLQ_OIDC_CLIENT_ID, "post_logout_redirect_uri": back}
    if id_token:
        params["id_token_hint"] = id_token
    return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(params)}"


def logout_origins(load: bool) -> list[str]:
    """Where "Log out" may go: the provider's origin, from the configuration, and its
    end-session endpoint's. `load` reads the discovery document if this process has not
    (for a page shown to someone who signed in through the provider)."""
    origins = {_origin(settings.DLQ_OIDC_DISCOVERY_URL)}
    try:
        known = metadata() if load else known_metadata()
    except ProviderError:
        known = {}
    if _is_url(known.get("end_session_endpoint")):
        origins.add(_origin(known["end_session_endpoint"]))
    return sorted(o for o in origins if o)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    host = parts.hostname or ""
    if not host or any(c in host for c in " ;,'\"\\"):
        return ""  # nothing that could end the policy's directive
    host = f"[{host}]" if ":" in host else host
    port = _port(parts)
    return f"{parts.scheme}://{host}{f':{port}' if port else ''}"


def _port(parts) -> int | None:
    try:
        return parts.port
    except ValueError:  # "host:abc": the request to it fails later, with a clear page
        return None


def _is_url(value) -> bool:
    return isinstance(value, str) and value.startswith(("https://", "http://"))


def _text(value) -> str:
    return clean(value.strip(), 255) if isinstance(value, str) else ""


def _short(error: Exception) -> str:
    return f"{type(error).__name__}: {str(error)[:300]}"
