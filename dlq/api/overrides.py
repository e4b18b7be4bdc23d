"""/api/v1/replay-targets: the replay overrides, where "original" replays go for the queues
matching a pattern (everyone reads them; admins change them, each change audited). The path
is the one they were published under, kept for the clients that use it."""

from ninja import Router, Status

from dlq.accounts.roles import ADMIN
from dlq.actions import overrides
from dlq.api.base import ACTION_ERRORS, ERRORS, needs
from dlq.http import request_id
from dlq.schemas.overrides import OverrideIn, OverrideList, OverrideOut

router = Router()

# The operation ids keep the names they had before the rename: generated clients name them.


@router.get("", response={200: OverrideList, **ERRORS},
            operation_id="dlq_api_targets_list_targets")  # fmt: skip
def list_overrides(request):
    """Every override, in the order a replay tries them."""
    return {"results": [overrides.describe(o) for o in overrides.listed()]}


@router.post("", response={201: OverrideOut, **ERRORS}, auth=needs(ADMIN),
             operation_id="dlq_api_targets_create_target")  # fmt: skip
def create_override(request, body: OverrideIn):
    override = overrides.save(request.auth, body.reason, body.queue_pattern, body.exchange,
                              body.routing_key, request_id=request_id(request))  # fmt: skip
    return Status(201, overrides.describe(override))


@router.put("/{id}", response={200: OverrideOut, **ACTION_ERRORS}, auth=needs(ADMIN),
            operation_id="dlq_api_targets_change_target")  # fmt: skip
def change_override(request, id: int, body: OverrideIn):
    override = overrides.save(
        request.auth, body.reason, body.queue_pattern, body.exchange, body.routing_key,
        override_id=id, request_id=request_id(request),
    )  # fmt: skip
    return overrides.describe(override)


@router.delete("/{id}", response={204: None, **ACTION_ERRORS}, auth=needs(ADMIN),
               operation_id="dlq_api_targets_delete_target")  # fmt: skip
def delete_override(request, id: int, reason: str = ""):
    """Delete an override; `?reason=` is required (the audit trail keeps it)."""
    overrides.delete(request.auth, reason, id, request_id(request))
    return Status(204, None)
