"""API tokens as people manage them: listing, making and revoking, each change audited.

Admins see and revoke everyone's tokens; anyone else only their own. The command line acts
as a system actor (a name, not a user) and sees them all. A revoked token is deleted: the
next request that shows it gets 401. Nothing here ever returns a token but `issue`, once.
"""

from django.db import transaction

from dlq import audit
from dlq.accounts.roles import ADMIN, has_role
from dlq.accounts.tokens import make_token
from dlq.actions.errors import NotFound
from dlq.models import ApiToken, AuditAction


def visible(actor, username: str | None = None):
    """The tokens `actor` may see, newest first; a system actor (a str) sees them all."""
    tokens = ApiToken.objects.select_related("user").order_by("-id")
    if not (isinstance(actor, str) or has_role(actor, ADMIN)):
        tokens = tokens.filter(user=actor)
    return tokens if username is None else tokens.filter(user__username=username)


def issue(user, actor, name: str = "", request_id: str = "") -> str:
    """A new token for `user`; the only time the token itself is seen."""
    with transaction.atomic():
        row, token = make_token(user, name)
        audit.record(actor, AuditAction.TOKEN_CREATE, detail=_audited(row), request_id=request_id)
    return token


def revoke(token_id: int, actor, request_id: str = "") -> dict:
    """Delete a token `actor` may see (404 otherwise: others' tokens are not confirmed to
    exist); it stops working at the next request. Returns what it was."""
    with transaction.atomic():
        token = visible(actor).select_for_update(of=("self",)).filter(pk=token_id).first()
        if token is None:
            raise NotFound(f"no token {token_id}")
        gone, detail = describe(token), _audited(token)
        token.delete()
        audit.record(actor, AuditAction.TOKEN_REVOKE, detail=detail, request_id=request_id)
    return gone


def describe(token: ApiToken) -> dict:
    """What anyone allowed to see a token may know of it: never the token or its hash."""
    return {
        "id": token.pk,
        "user": token.user.get_username(),
        "name": token.name,
        "prefix": token.prefix,
        "created_at": token.created_at,
        "last_used_at": token.last_used_at,
    }


def _audited(token: ApiToken) -> dict:
    return {"token_id": token.pk, "user": token.user.get_username(), "prefix": token.prefix}
