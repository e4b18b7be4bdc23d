"""Acknowledged topology warnings: an admin says a warning (a check on a queue in a vhost) is
known and accepted, with a reason; the page then shows it apart, with who, when and why,
until someone withdraws it. Both are audited (`topology_ack`, `topology_unack`).

An acknowledgement outlives its warning: if the same check on the same queue warns again
later, it is still acknowledged (the page lists acknowledgements whose warning is gone, so
they can be withdrawn).
"""

from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.utils import timezone

from dlq import audit
from dlq.health.topology import CHECKS, Finding
from dlq.models import AuditAction, TopologyAcknowledgement


class AcknowledgementError(ValueError):
    """Bad input, field by field (the page answers 400 with them)."""

    def __init__(self, errors: dict[str, list[str]]):
        self.errors = errors
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))


@dataclass
class Acknowledged:
    """An acknowledgement with its warning as found now (None: no longer found)."""

    ack: TopologyAcknowledgement
    finding: Finding | None


def split(findings: list[Finding]) -> tuple[list[Finding], list[Acknowledged]]:
    """The findings nobody acknowledged, and every acknowledgement with its finding."""
    acks = {(a.vhost, a.queue, a.check_name): a for a in TopologyAcknowledgement.objects.all()}
    open_, found = [], {}
    for f in findings:
        if (f.vhost, f.queue, f.check) in acks:
            found[(f.vhost, f.queue, f.check)] = f
        else:
            open_.append(f)
    acknowledged = [Acknowledged(a, found.get(key)) for key, a in sorted(acks.items())]
    return open_, acknowledged


def acknowledge(actor, vhost: str, queue: str, check: str, reason: str,
                request_id: str = "") -> TopologyAcknowledgement:  # fmt: skip
    key = _key(vhost, queue, check)
    reason = _reason(reason)
    try:
        with transaction.atomic():
            ack = TopologyAcknowledgement.objects.create(
                **key, reason=reason, actor_name=audit.actor_fields(actor)["actor_name"],
                at=timezone.now(),
            )  # fmt: skip
            audit.record(actor, AuditAction.TOPOLOGY_ACK, reason, detail=_detail(key),
                         request_id=request_id)  # fmt: skip
    except IntegrityError:
        raise AcknowledgementError({"check_name": ["is acknowledged already"]}) from None
    return ack


def withdraw(actor, vhost: str, queue: str, check: str, reason: str,
             request_id: str = "") -> None:  # fmt: skip
    key = _key(vhost, queue, check)
    reason = _reason(reason)
    with transaction.atomic():
        ack = TopologyAcknowledgement.objects.select_for_update().filter(**key).first()
        if ack is None:
            raise AcknowledgementError({"check_name": ["is not acknowledged"]})
        detail = {
            **_detail(key),
            "acknowledged_by": ack.actor_name,
            "acknowledged_at": ack.at.isoformat(),
            "acknowledged_for": ack.reason,
        }
        ack.delete()
        audit.record(actor, AuditAction.TOPOLOGY_UNACK, reason, detail=detail,
                     request_id=request_id)  # fmt: skip


def _key(vhost: str, queue: str, check: str) -> dict:
    errors = {}
    for name, value in (("vhost", vhost), ("queue", queue)):
        if not isinstance(value, str) or not value or "\x00" in value:
            errors[name] = ["is required, as text without NUL"]
        elif len(value.encode()) > 255:
            errors[name] = ["is longer than 255 bytes"]
    if check not in CHECKS:
        errors["check_name"] = [f"must be one of {', '.join(CHECKS)}"]
    if errors:
        raise AcknowledgementError(errors)
    return {"vhost": vhost, "queue": queue, "check_name": check}


def _detail(key: dict) -> dict:
    return {"vhost": key["vhost"], "queue": key["queue"], "check": key["check_name"]}


def _reason(reason: str) -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise AcknowledgementError({"reason": ["is required: say why, for the audit trail"]})
    return reason.strip()
