"""Per-queue replay overrides: where "original" goes for the messages of queues matching a
pattern, when the first death is not where the message came from (a retry framework's delay
exchange, for example). Admins manage them; every change is audited with before and after
(as `replay_target_change`, the name the audit trail and the API have always used).

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
    """Every override, in the order a replay tries them (the first matching pattern wins)."""
    return replay.load_overrides()


def describe(override: ReplayOverride) -> dict:
    return {
        "id": override.pk,
        "queue_pattern": override.queue_pattern,
        "exchange": override.exchange,
        "routing_key": override.routing_key,
        "created_at": override.created_at,
    }


def save(actor, reason: str, queue_pattern: str, exchange: str, routing_key: str,
         override_id: int | None = None, request_id: str = "") -> ReplayOverride:  # fmt: skip
    """Create an override, or change the one with `override_id`."""
    fields = _checked(queue_pattern, exchange, routing_key)
    reason = _reason(reason)
    try:
        with transaction.atomic():
            if override_id is None:
                override, before = ReplayOverride(), None
            else:
                override = _locked(override_id)
                before = _audited(override)
            _unique(fields["queue_pattern"], override_id)
            for name, value in fields.items():
                setattr(override, name, value)
            override.save()
            audit.record(actor, AuditAction.REPLAY_TARGET_CHANGE, reason,
                         detail={"before": before, "after": _audited(override)},
                         request_id=request_id)  # fmt: skip
    except IntegrityError:
        raise ActionError({"queue_pattern": ["another override has this pattern"]}) from None
    return override


def delete(actor, reason: str, override_id: int, request_id: str = "") -> None:
    reason = _reason(reason)
    with transaction.atomic():
        override = _locked(override_id)
        before = _audited(override)
        override.delete()
        audit.record(actor, AuditAction.REPLAY_TARGET_CHANGE, reason,
                     detail={"before": before, "after": None}, request_id=request_id)  # fmt: skip


def _locked(override_id: int) -> ReplayOverride:
    override = ReplayOverride.objects.select_for_update().filter(pk=override_id).first()
    if override is None:
        raise NotFound(f"no replay override {override_id}")
    return override


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


def _unique(queue_pattern: str, override_id: int | None) -> None:
    """One override per pattern, however it is spelled: `orders.*` and `%2F/orders.*` name
    the same queues when `/` is the default vhost, and the second would never be used."""
    default = amqp.vhost_of(settings.DLQ_BROKER_URL)
    wanted = names.parse(queue_pattern, default)
    for other in ReplayOverride.objects.exclude(pk=override_id).select_for_update():
        try:
            same = names.parse(other.queue_pattern, default) == wanted
        except names.PatternError:
            continue
        if same:
            taken = f"override {other.pk} already has this pattern, written {other.queue_pattern!r}"
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


def _audited(override: ReplayOverride) -> dict:
    """What the audit row keeps before and after a change: what a replay follows."""
    return {k: v for k, v in describe(override).items() if k != "created_at"}
