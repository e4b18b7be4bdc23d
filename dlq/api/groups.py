"""/api/v1/groups: failure groups as a worklist (every role reads them), and who is on one
(operators set the owner, note, ticket and hold, each change audited)."""

from django.contrib.auth import get_user_model
from django.http import Http404
from ninja import Query, Router

from dlq.accounts.roles import OPERATOR
from dlq.api.base import ACTION_ERRORS, ERRORS, needs
from dlq.groups import triage, worklist
from dlq.http import request_id
from dlq.schemas.errors import ErrorOut
from dlq.schemas.groups import GroupChangeIn, GroupListQuery, GroupOut, GroupPage

router = Router()


@router.get("", response={200: GroupPage, **ERRORS})
def list_groups(request, params: Query[GroupListQuery]):
    """Failure groups, most parked first; filters `vhost`, `queue` (groups with messages
    there), `state`, `owner` (a user's name); `limit` and `offset` page through them."""
    owner_id = None
    if params.owner:
        user = get_user_model().objects.filter(username=params.owner).first()
        if user is None:
            return {"results": [], "count": 0, "next_offset": None}
        owner_id = user.pk
    rows, count = worklist.listed(params.vhost or "", params.queue or "", params.state or "",
                                  owner_id, params.limit, params.offset)  # fmt: skip
    more = params.offset + len(rows) < count
    return {
        "results": rows,
        "count": count,
        "next_offset": params.offset + len(rows) if more else None,
    }


@router.get("/{id}", response={200: GroupOut, 404: ErrorOut, **ERRORS})
def get_group(request, id: str):
    """One group (`id` is its fingerprint)."""
    row = worklist.one(id)
    if row is None:
        raise Http404(f"no stored message of group {id}")
    return row


@router.patch("/{id}", response={200: GroupOut, **ACTION_ERRORS}, auth=needs(OPERATOR))
def change_group(request, id: str, body: GroupChangeIn):
    """Set any of `owner`, `note`, `ticket_url`, `hold_until` with a `reason`; audited as
    `group_update` with before and after."""
    return triage.update(request.auth, id, body.changes(), body.reason, request_id(request))
