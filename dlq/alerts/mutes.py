"""Mutes: silence a queue (name or glob), a failure group, or a group in a queue, for a while.
A queue is `QUEUE` (in the default vhost) or `VHOST/QUEUE`, either part a glob.

A mute hides arrivals from every alert rule, so it is an operator action like any other: it
needs a reason, its end is bounded (DLQ_MUTE_MAX_DAYS ahead at most: nobody mutes `*` until
9999 by mistake), and adding and removing one are audited.
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from dlq import audit
from dlq.alerts import patterns
from dlq.models import AuditAction, Mute


def problems(until: datetime | None, reason: str, queue: str = "", group: str = "",
             now: datetime | None = None) -> dict:  # fmt: skip
    """What is wrong with a mute, field by field (empty: nothing)."""
    found = {}
    if not queue and not group:
        found["queue"] = ["name a queue (or glob), a group, or both"]
    elif queue and patterns.pattern_errors([queue]):
        found["queue"] = patterns.pattern_errors([queue])
    if not (reason or "").strip():
        found["reason"] = ["a reason is required"]
    latest = (now or timezone.now()) + timedelta(days=settings.DLQ_MUTE_MAX_DAYS)
    if until is not None and until > latest:
        found["until"] = [f"at most {settings.DLQ_MUTE_MAX_DAYS} days ahead (DLQ_MUTE_MAX_DAYS)"]
    return found


def mute(until: datetime, queue: str = "", group: str = "", reason: str = "", actor=None,
         request_id: str = "") -> Mute:  # fmt: skip
    """Add a mute; raises ValidationError (field by field) for a bad one."""
    found = problems(until, reason, queue, group)
    if found:
        raise ValidationError(found)
    with transaction.atomic():
        made = Mute.objects.create(
            queue=queue,
            group=group,
            until=until,
            reason=reason.strip(),
            created_by=actor if actor is not None and not isinstance(actor, str) else None,
            created_by_name=audit.actor_fields(actor or "manage.py")["actor_name"],
        )
        audit.record(actor or "manage.py", AuditAction.MUTE_ADD, made.reason,
                     detail=_described(made), request_id=request_id)  # fmt: skip
    return made


def unmute(mute_id: int, actor, request_id: str = "") -> bool:
    """Remove a mute (False if it was gone already)."""
    with transaction.atomic():
        found = Mute.objects.select_for_update().filter(pk=mute_id).first()
        if found is None:
            return False
        detail = _described(found)
        found.delete()
        audit.record(actor, AuditAction.MUTE_REMOVE, detail=detail, request_id=request_id)
    return True


def _described(mute: Mute) -> dict:
    return {"mute_id": mute.pk, "queue": mute.queue, "group": mute.group,
            "until": mute.until.isoformat()}  # fmt: skip
