"""Reading the drainers' heartbeats (dlq/drain/heartbeat.py writes them): who drains, what
the overview shows, and the alert when a drainer stops reporting without a clean stop."""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from dlq.models import AlertAttempt, AlertChannel
from dlq.models.health import DrainerHeartbeat

log = logging.getLogger("dlq.heartbeat")


def stale_after() -> timedelta:
    return timedelta(seconds=settings.DLQ_DRAINER_STALE_SECONDS)


def is_stale(row: DrainerHeartbeat, now) -> bool:
    return row.stopped_at is None and now - row.last_seen_at > stale_after()


def recent_drainers(now=None) -> list[DrainerHeartbeat]:
    """Running drainers, and those that stopped in the last day (older rows are history)."""
    now = now or timezone.now()
    rows = DrainerHeartbeat.objects.filter(last_seen_at__gte=now - timedelta(days=1))
    return list(rows.order_by("host", "pid"))


def overview_context(now=None) -> dict:
    """What templates/_drainers.html needs: {"drainers": [...], "draining": bool}."""
    now = now or timezone.now()
    drainers = [_describe(row, now) for row in recent_drainers(now)]
    return {
        "drainers": drainers,
        "draining": any(d["state"] == "running" for d in drainers),
    }


def _describe(row: DrainerHeartbeat, now) -> dict:
    if row.stopped_at is not None:
        state = "stopped"
    elif is_stale(row, now):
        state = "not reporting"
    else:
        state = "running"
    return {
        "name": row.name,
        "host": row.host,
        "pid": row.pid,
        "state": state,
        "queues": row.queues,
        "node": row.node if state == "running" else "",
        "stored": row.stored,
        "last_seen_at": row.last_seen_at,
        "last_seen_s": _seconds(now, row.last_seen_at),
        "last_batch_at": row.last_batch_at,
        "last_batch_s": _seconds(now, row.last_batch_at),
    }


def _seconds(now, then) -> int | None:
    return None if then is None else max(0, int((now - then).total_seconds()))


def stale_drainers(now=None) -> list[DrainerHeartbeat]:
    """Drainers that stopped reporting without a clean stop and were not alerted yet."""
    now = now or timezone.now()
    rows = DrainerHeartbeat.objects.filter(
        stopped_at__isnull=True,
        alerted_at__isnull=True,
        last_seen_at__lt=now - stale_after(),
        last_seen_at__gte=now - timedelta(days=1),
    )
    return list(rows.order_by("id"))


def alert_stale(now=None) -> list[int]:
    """Queue one alert per silent drainer to every enabled channel; the attempt ids."""
    now = now or timezone.now()
    attempt_ids = []
    for row in stale_drainers(now):
        with transaction.atomic():
            claimed = DrainerHeartbeat.objects.filter(pk=row.pk, alerted_at__isnull=True)
            if not claimed.update(alerted_at=now):
                continue  # another beat took it
            silent = _seconds(now, row.last_seen_at)
            text = f"{row.name} has not reported for {silent} s"
            attempts = AlertAttempt.objects.bulk_create(
                AlertAttempt(channel=channel, channel_name=channel.name, kind="drainer",
                             not_before=now, created_at=now, summary=text[:255])
                for channel in AlertChannel.objects.filter(enabled=True).order_by("id")
            )  # fmt: skip
        log.warning("a drainer stopped reporting", extra={"drainer": row.name, "silent_s": silent})
        attempt_ids += [a.id for a in attempts]
    return attempt_ids
