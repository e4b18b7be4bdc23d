"""A policy whose replays keep coming back stops by itself: once `trip_returns` of its
redriven messages were stored again within `trip_window_seconds` (counted since it was
armed), its state is `tripped`, its waiting messages stay parked, and it says so once: an
audit row (actor `policy:NAME`), a log line at WARNING, and one alert to every enabled
channel (an attempt of kind `policy`, sent as a drainer's silence is: dlq/alerts/delivery.py)."""

import logging
from datetime import UTC, datetime, timedelta

from django.db import transaction

from dlq import audit
from dlq.models import AlertAttempt, AlertChannel, AuditAction
from dlq.models.redrive import PolicyState, RedriveDue, RedrivePolicy
from dlq.redrive import matching

log = logging.getLogger(__name__)


def returns(policy: RedrivePolicy, now: datetime) -> int:
    """The policy's returns within its window (not before it was armed)."""
    since = max(now - timedelta(seconds=policy.trip_window_seconds), policy.armed_at)
    return RedriveDue.objects.filter(policy=policy, returned_at__gte=since).count()


def check(now: datetime | None = None) -> list[int]:
    """Trip every active policy over its limit; the ids of the alert attempts to send."""
    now = now or datetime.now(UTC)
    attempts = []
    for policy in matching.active():
        count = returns(policy, now)
        if count >= policy.trip_returns:
            attempts += _trip(policy, count, now)
    return attempts


def _trip(policy: RedrivePolicy, count: int, now: datetime) -> list[int]:
    with transaction.atomic():
        changed = RedrivePolicy.objects.filter(pk=policy.pk, state=PolicyState.ACTIVE).update(
            state=PolicyState.TRIPPED, tripped_at=now
        )
        if not changed:
            return []  # another tick tripped it: one alert
        detail = {"policy": policy.pk, "name": policy.name, "returns": count,
                  "window_seconds": policy.trip_window_seconds}  # fmt: skip
        said = (f"redrive policy {policy.name} tripped: {count} of its redriven messages came"
                f" back within {policy.trip_window_seconds} s")  # fmt: skip
        audit.record(f"policy:{policy.name}", AuditAction.POLICY_TRIP, said, detail=detail)
        attempts = AlertAttempt.objects.bulk_create(
            AlertAttempt(channel=channel, channel_name=channel.name, kind="policy",
                         not_before=now, created_at=now, summary=said[:255])
            for channel in AlertChannel.objects.filter(enabled=True).order_by("id")
        )  # fmt: skip
    log.warning("redrive policy %s tripped: %s of its redriven messages came back within %s s",
                policy.name, count, policy.trip_window_seconds)  # fmt: skip
    return [a.id for a in attempts]
