"""Per-queue replay targets: where "original" goes for the messages of queues matching a
pattern, when the first death is not where the message came from (a retry framework's delay
exchange, for example). Admins manage them; every change is audited with before and after.

A pattern is QUEUE (in the default vhost, the one in DLQ_BROKER_URL) or VHOST/QUEUE, each
part a name or a glob (dlq/broker/names.py); the exchange is in the message's own vhost.
"""

from django.conf import settings
from django.db import IntegrityError, transaction

from dlq import audit
from dlq.actions import replay
from dlq.actions.errors import ActionError, NotFound
from dlq.broker import amqp, names
from dlq.models import AuditAction
from dlq.models.actions import ReplayOverride


def listed() -> list[ReplayOverride]:
    """Every target, in the order a replay tries them (the first matching pattern wins)."""
    return replay.load_overrides()


def describe(target: ReplayOverride) -> dict:
    return {
        "id": target.pk,
        "queue_pattern": target.queue_pattern,
        "exchange": target.exchange,
        "routing_key": target.routing_key,
        "created_at": target.created_at,
    }


def save(actor, reason: str, queue_pattern: str, exchange: str, routing_key: str,
         target_id: int | None = None, request_id: str = "") -> ReplayOverride:  # fmt: skip
    """Create a target, or change the one with `target_id`."""
    fields = _checked(queue_pattern, exchange, routing_key)
    reason = _reason(reason)
    try:
        with transaction.atomic():
            if target_id is None:
                target, before = ReplayOverride(), None
            else:
                target = _locked(target_id)
                before = _audited(target)
            _unique(fields["queue_pattern"], target_id)
            for name, value in fields.items():
                setattr(target, name, value)
            target.save()
            audit.record(actor, AuditAction.REPLAY_TARGET_CHANGE, reason,
                         detail={"before": before, "after": _audited(target)},
                         request_id=request_id)  # fmt: skip
    except IntegrityError:
        raise ActionError({"queue_pattern": ["another target has this pattern"]}) from None
    return target


def delete(actor, reason: str, target_id: int, request_id: str = "") -> None:
    reason = _reason(reason)
    with transaction.atomic():
        target = _locked(target_id)
        before = _audited(target)
        target.delete()
        audit.record(actor, AuditAction.REPLAY_TARGET_CHANGE, reason,
                     detail={"before": before, "after": None}, request_id=request_id)  # fmt: skip


def _locked(target_id: int) -> ReplayOverride:
    target = ReplayOverride.objects.select_for_update().filter(pk=target_id).first()
    if target is None:
        raise NotFound(f"no replay target {target_id}")
    return target


def _checked(queue_pattern: str, exchange: str, routing_key: str) -> dict:
    errors = {}
    values = {"queue_pattern": queue_pattern, "exchange": exchange, "routing_key": routing_key}
    for name, value in values.items():
        if not isinstance(value, str) or "\x00" in value:
            errors[name] = ["must be text without NUL"]
        elif len(value.encode()) > 255:
            errors[name] = ["is longer than 255 bytes"]
    if not errors and not queue_pattern.strip():
        errors["queue_pattern"] = ["is required (a queue name or a glob such as orders.*)"]
    elif not errors and (problem := _pattern_problem(queue_pattern)):
        errors["queue_pattern"] = [problem]
    if not errors and exchange == "" and routing_key == "":
        errors["routing_key"] = ["is required with the default exchange (it names the queue)"]
    if errors:
        raise ActionError(errors)
    return values


def _unique(queue_pattern: str, target_id: int | None) -> None:
    """One target per pattern, however it is spelled: `orders.*` and `%2F/orders.*` name
    the same queues when `/` is the default vhost, and the second would never be used."""
    default = amqp.vhost_of(settings.DLQ_BROKER_URL)
    wanted = names.parse(queue_pattern, default)
    for other in ReplayOverride.objects.exclude(pk=target_id).select_for_update():
        try:
            same = names.parse(other.queue_pattern, default) == wanted
        except names.PatternError:
            continue
        if same:
            taken = f"target {other.pk} already has this pattern, written {other.queue_pattern!r}"
            raise ActionError({"queue_pattern": [taken]})


def _pattern_problem(queue_pattern: str) -> str:
    """Why a pattern names no queue ("" when it does): QUEUE (in the default vhost) or
    VHOST/QUEUE, as in DLQ_QUEUES."""
    try:
        names.parse(queue_pattern, amqp.vhost_of(settings.DLQ_BROKER_URL))
    except names.PatternError as e:
        return f"{e}; a / inside a vhost name is written %2F"
    return ""


def _reason(reason: str) -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise ActionError({"reason": ["is required: say why, for the audit trail"]})
    return reason.strip()


def _audited(target: ReplayOverride) -> dict:
    return {
        "id": target.pk,
        "queue_pattern": target.queue_pattern,
        "exchange": target.exchange,
        "routing_key": target.routing_key,
    }
