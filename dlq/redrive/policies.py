"""Defining redrive policies (contract: "Redrive policies"): create, change, delete, each in
one transaction with its audit row (before and after), and the policy as the API shows it.

Saving a policy re-matches the parked messages (matching.rematch), so a policy edited while
its messages wait applies its new delay, cap and match to them."""

from datetime import UTC, datetime

from django.db import IntegrityError, transaction

from dlq import audit
from dlq.actions.errors import ActionError, NotFound
from dlq.models import AuditAction
from dlq.models.redrive import MATCH_FIELDS, PolicyState, RedrivePolicy
from dlq.redrive import matching

FIELDS = ("name", "enabled", "match", "target", "delay_seconds", "backoff", "max_attempts",
          "rate_per_s", "require_consumers", "trip_returns", "trip_window_seconds")  # fmt: skip


def describe(policy: RedrivePolicy) -> dict:
    """The policy as an admin defined it, and its state (what the audit keeps)."""
    return {"id": policy.pk, **{f: getattr(policy, f) for f in FIELDS}, "state": policy.state}


def shown(policy: RedrivePolicy) -> dict:
    """describe(), and what holds its messages back now (the API's policy)."""
    return {**describe(policy), "waiting": policy.waiting, "waiting_since": policy.waiting_since}


def listed() -> list[RedrivePolicy]:
    return list(RedrivePolicy.objects.order_by("id"))


def one(policy_id: int) -> RedrivePolicy:
    policy = RedrivePolicy.objects.filter(pk=policy_id).first()
    if policy is None:
        raise NotFound(f"no redrive policy {policy_id}")
    return policy


def save(actor, values: dict, reason: str = "", policy_id: int | None = None,
         request_id: str = "") -> RedrivePolicy:  # fmt: skip
    """Create a policy, or replace the one with `policy_id` (a PUT). `enabled: true` re-arms
    a tripped policy: it is active again and counts returns from now on."""
    values = _checked(values)
    now = datetime.now(UTC)
    try:
        with transaction.atomic():
            if policy_id is None:
                policy, before = RedrivePolicy(armed_at=now), None
            else:
                policy = _locked(policy_id)
                before = describe(policy)
            for name, value in values.items():
                setattr(policy, name, value)
            if not policy.enabled:
                policy.state = PolicyState.DISABLED
            elif policy.state != PolicyState.ACTIVE:
                policy.state, policy.armed_at, policy.tripped_at = PolicyState.ACTIVE, now, None
            policy.save()
            action = AuditAction.POLICY_CREATE if before is None else AuditAction.POLICY_UPDATE
            audit.record(actor, action, reason.strip(), request_id=request_id,
                         detail={"before": before, "after": describe(policy)})  # fmt: skip
            matching.rematch(policy)
    except IntegrityError:
        taken = RedrivePolicy.objects.filter(name=values.get("name")).exclude(pk=policy_id)
        if taken.exists():
            raise ActionError({"name": ["another policy has this name"]}) from None
        raise  # not the name: a caller's values the API would have completed
    return policy


def delete(actor, policy_id: int, reason: str = "", request_id: str = "") -> None:
    """Delete a policy; what it had scheduled is forgotten (its messages stay parked)."""
    with transaction.atomic():
        policy = _locked(policy_id)
        before = describe(policy)
        policy.delete()
        audit.record(actor, AuditAction.POLICY_DELETE, reason.strip(), request_id=request_id,
                     detail={"before": before, "after": None})  # fmt: skip


def _locked(policy_id: int) -> RedrivePolicy:
    policy = RedrivePolicy.objects.select_for_update().filter(pk=policy_id).first()
    if policy is None:
        raise NotFound(f"no redrive policy {policy_id}")
    return policy


def _checked(values: dict) -> dict:
    """What the schema cannot say: a name, and at least one value to match."""
    values = {k: values[k] for k in FIELDS if k in values}
    errors = {}
    values["name"] = (values.get("name") or "").strip()
    if not values["name"]:
        errors["name"] = ["is required"]
    match = {k: v for k, v in (values.get("match") or {}).items() if v is not None}
    if not match:
        errors["match"] = ["needs at least one of " + ", ".join(MATCH_FIELDS)]
    values["match"] = match
    if errors:
        raise ActionError(errors)
    return values
