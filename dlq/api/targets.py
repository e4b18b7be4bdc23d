"""/api/v1/replay-targets: where "original" replays go for the queues matching a pattern
(everyone reads them; admins change them, each change audited)."""

from ninja import Router, Status

from dlq.accounts.roles import ADMIN
from dlq.actions import targets
from dlq.api.base import ACTION_ERRORS, ERRORS, needs
from dlq.http import request_id
from dlq.schemas.targets import TargetIn, TargetList, TargetOut

router = Router()


@router.get("", response={200: TargetList, **ERRORS})
def list_targets(request):
    """Every target, in the order a replay tries them."""
    return {"results": [targets.describe(t) for t in targets.listed()]}


@router.post("", response={201: TargetOut, **ERRORS}, auth=needs(ADMIN))
def create_target(request, body: TargetIn):
    target = targets.save(request.auth, body.reason, body.queue_pattern, body.exchange,
                          body.routing_key, request_id=request_id(request))  # fmt: skip
    return Status(201, targets.describe(target))


@router.put("/{id}", response={200: TargetOut, **ACTION_ERRORS}, auth=needs(ADMIN))
def change_target(request, id: int, body: TargetIn):
    target = targets.save(
        request.auth, body.reason, body.queue_pattern, body.exchange, body.routing_key,
        target_id=id, request_id=request_id(request),
    )  # fmt: skip
    return targets.describe(target)


@router.delete("/{id}", response={204: None, **ACTION_ERRORS}, auth=needs(ADMIN))
def delete_target(request, id: int, reason: str = ""):
    """Delete a target; `?reason=` is required (the audit trail keeps it)."""
    targets.delete(request.auth, reason, id, request_id(request))
    return Status(204, None)
