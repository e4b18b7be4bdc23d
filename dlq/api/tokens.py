"""/api/v1/tokens: API tokens (admins: everyone's; anyone else: their own), never the token."""

from ninja import Router, Status

from dlq.actions import tokens
from dlq.api.base import ACTION_ERRORS, ERRORS
from dlq.http import request_id
from dlq.schemas.tokens import TokenList

router = Router()


@router.get("", response={200: TokenList, **ERRORS})
def list_tokens(request):
    """Tokens, newest first: id, user, prefix, created, last used."""
    return {"results": [tokens.describe(t) for t in tokens.visible(request.auth)]}


@router.delete("/{id}", response={204: None, **ACTION_ERRORS})
def revoke_token(request, id: int):
    """Revoke a token at once: the next request that shows it gets 401."""
    tokens.revoke(id, request.auth, request_id(request))
    return Status(204, None)
