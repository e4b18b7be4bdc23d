"""Retention: replayed and discarded messages go after DLQ_RETENTION_DAYS, in batches.

Days count from the message's last status change (StatusChange, kept by a database
trigger), so a message discarded yesterday is restorable for the full period however old
it is. Parked and replaying messages are never purged. Each batch is its own short
transaction, so the drainer and the console are never blocked for long. Audit rows are
kept forever unless DLQ_AUDIT_RETENTION_DAYS is set.
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from dlq import audit
from dlq.models import Message, Status

log = logging.getLogger("dlq.retention")

PURGEABLE = (Status.REPLAYED, Status.DISCARDED)
MAX_BATCHES = 1000  # one pass stops here; the next hourly pass goes on


def purge_all(now=None) -> dict:
    now = now or timezone.now()
    done = {"messages": purge_messages(now), "audit": purge_audit(now)}
    if any(done.values()):
        log.info("retention purge", extra=done)
    return done


def purge_messages(now=None, days=None, batch=None) -> int:
    days = settings.DLQ_RETENTION_DAYS if days is None else days
    if not days:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=days)
    return _in_batches(lambda: _purge_message_batch(cutoff, batch or settings.DLQ_RETENTION_BATCH))


def _in_batches(step) -> int:
    total = 0
    for _ in range(MAX_BATCHES):
        n = step()
        total += n
        if not n:
            break
    return total


def _purge_message_batch(cutoff, size: int) -> int:
    """One transaction; the rows are locked so a concurrent restore waits, then finds none."""
    with transaction.atomic():
        due = Message.objects.filter(
            status__in=PURGEABLE,
            status_change__status=F("status"),
            status_change__at__lt=cutoff,
        )
        ids = list(
            due.order_by("id").select_for_update(of=("self",), skip_locked=True)
            .values_list("id", flat=True)[:size]
        )  # fmt: skip
        if ids:
            # only("id"): the cascade needs the ids, not the bodies (up to megabytes each).
            Message.objects.filter(id__in=ids, status__in=PURGEABLE).only("id").delete()
    return len(ids)


def purge_audit(now=None, days=None, batch=None) -> int:
    """Audit rows older than DLQ_AUDIT_RETENTION_DAYS (0, the default: kept forever)."""
    days = settings.DLQ_AUDIT_RETENTION_DAYS if days is None else days
    if not days:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=days)
    audit.allow_purge(days)
    return _in_batches(lambda: audit.purge(cutoff, batch or settings.DLQ_RETENTION_BATCH))
