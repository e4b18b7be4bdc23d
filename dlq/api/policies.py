"""/api/v1/policies: standing redrive policies (everyone reads them; admins change them,
each change audited with before and after)."""

from ninja import Router, Status

from dlq.accounts.roles import ADMIN
from dlq.api.base import ACTION_ERRORS, ERRORS, needs
from dlq.http import request_id
from dlq.redrive import policies
from dlq.schemas.policies import PolicyIn, PolicyList, PolicyOut

router = Router()


@router.get("", response={200: PolicyList, **ERRORS})
def list_policies(request):
    return {"results": [policies.shown(p) for p in policies.listed()]}


@router.get("/{id}", response={200: PolicyOut, **ACTION_ERRORS})
def get_policy(request, id: int):
    return policies.shown(policies.one(id))


@router.post("", response={201: PolicyOut, **ERRORS}, auth=needs(ADMIN))
def create_policy(request, body: PolicyIn):
    """A new policy; it matches the parked messages there are at once."""
    policy = policies.save(request.auth, body.values(), body.reason, request_id=request_id(request))
    return Status(201, policies.shown(policy))


@router.put("/{id}", response={200: PolicyOut, **ACTION_ERRORS}, auth=needs(ADMIN))
def change_policy(request, id: int, body: PolicyIn):
    """Replace a policy; `enabled: true` re-arms a tripped one."""
    policy = policies.save(request.auth, body.values(), body.reason, policy_id=id,
                           request_id=request_id(request))  # fmt: skip
    return policies.shown(policy)


@router.delete("/{id}", response={204: None, **ACTION_ERRORS}, auth=needs(ADMIN))
def delete_policy(request, id: int, reason: str = ""):
    policies.delete(request.auth, id, reason, request_id(request))
    return Status(204, None)
