"""API tokens: made for a user and shown once, stored only as their SHA-256, and looked up
by the API's bearer authentication (dlq/api/auth.py)."""

import hashlib
import secrets
from datetime import UTC, datetime, timedelta

from dlq.models import ApiToken

PREFIX = "dlq_"
TOUCH_EVERY = timedelta(minutes=1)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


def create_token(user, name: str = "") -> str:
    """Store a new token for the user and return it; this is the only time it is seen."""
    return make_token(user, name)[1]


def make_token(user, name: str = "") -> tuple[ApiToken, str]:
    """The stored row and the token itself (which is not stored)."""
    token = PREFIX + secrets.token_urlsafe(32)
    row = ApiToken.objects.create(
        user=user, name=name, prefix=token[:12], token_hash=hash_token(token)
    )
    return row, token


def user_for_token(token: str):
    """The active user a token belongs to, or None; notes the use at most once a minute."""
    found = ApiToken.objects.select_related("user").filter(token_hash=hash_token(token)).first()
    if found is None or not found.user.is_active:
        return None
    now = datetime.now(UTC)
    if found.last_used_at is None or now - found.last_used_at >= TOUCH_EVERY:
        ApiToken.objects.filter(pk=found.pk).update(last_used_at=now)
    return found.user
