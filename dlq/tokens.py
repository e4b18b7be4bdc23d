"""API authentication: bearer tokens (stored only as SHA-256) and the browser session.

Each authenticator is made for the role an endpoint needs (`BearerAuth(OPERATOR)`): it
answers None without valid credentials (ninja answers 401), raises PermissionDenied (403)
for a user below that role (dlq/roles.py), else answers the user. A token acts with its
user's role.
"""

import hashlib
import secrets
from datetime import UTC, datetime, timedelta

from django.conf import settings
from ninja.errors import AuthorizationError
from ninja.security import HttpBearer
from ninja.security.apikey import APIKeyCookie
from ninja.utils import check_csrf

from dlq.models import ApiToken
from dlq.roles import VIEWER, require_role

PREFIX = "dlq_"
TOUCH_EVERY = timedelta(minutes=1)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def create_token(user, name: str = "") -> str:
    """Store a new token for the user and return it; this is the only time it is seen."""
    token = PREFIX + secrets.token_urlsafe(32)
    ApiToken.objects.create(user=user, name=name, prefix=token[:12], token_hash=hash_token(token))
    return token


def user_for_token(token: str):
    """The active user a token belongs to, or None; notes the use at most once a minute."""
    found = ApiToken.objects.select_related("user").filter(token_hash=hash_token(token)).first()
    if found is None or not found.user.is_active:
        return None
    now = datetime.now(UTC)
    if found.last_used_at is None or now - found.last_used_at >= TOUCH_EVERY:
        ApiToken.objects.filter(pk=found.pk).update(last_used_at=now)
    return found.user


class _NeedsRole:
    def __init__(self, role: str = VIEWER, **kwargs):
        self.role = role
        super().__init__(**kwargs)

    def allowed(self, user):
        if user is not None:
            require_role(user, self.role)
        return user


class BearerAuth(_NeedsRole, HttpBearer):
    """`Authorization: Bearer TOKEN`."""

    def authenticate(self, request, token):
        return self.allowed(user_for_token(token) if token else None)


class SessionAuth(_NeedsRole, APIKeyCookie):
    """The browser session; requests that change state must carry the CSRF token.

    Unlike ninja's `django_auth`, an anonymous request is answered 401 before any CSRF
    check, and a request that sends a bearer token is left to the token alone.
    """

    param_name = settings.SESSION_COOKIE_NAME

    def _get_key(self, request):
        return None  # the session middleware has already read the cookie

    def authenticate(self, request, key):
        user = request.user
        bearer = request.headers.get("Authorization", "").split(" ")[0].lower() == "bearer"
        if bearer or not user.is_authenticated:
            return None
        if check_csrf(request) is not None:  # always passes for GET, HEAD, OPTIONS
            raise AuthorizationError(message="CSRF check failed")
        return self.allowed(user)
