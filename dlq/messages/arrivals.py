"""Arrivals over time, for the overview: per queue in the last hour and day, and per hour.

Bounded by `received_at` (msg_received) over a recent window: never the whole table."""

from datetime import datetime, timedelta

from django.db.models import Count, Q
from django.db.models.functions import TruncHour

from dlq.models import Message


def arrivals_by_queue(now: datetime) -> dict[tuple[str, str], dict]:
    """Per (vhost, queue): arrivals in the last hour and the last day."""
    hour_ago = now - timedelta(hours=1)
    rows = (
        Message.objects.filter(received_at__gte=now - timedelta(days=1))
        .order_by()
        .values("vhost", "queue")
        .annotate(day=Count("id"), hour=Count("id", filter=Q(received_at__gte=hour_ago)))
    )
    return {(r["vhost"], r["queue"]): {"hour": r["hour"], "day": r["day"]} for r in rows}


def hourly_arrivals(now: datetime, hours: int = 24) -> tuple[list[datetime], dict[str, list]]:
    """The last `hours` hour buckets (oldest first, the current hour last) and, per queue,
    the arrivals in each."""
    current = now.replace(minute=0, second=0, microsecond=0)
    buckets = [current - timedelta(hours=n) for n in range(hours - 1, -1, -1)]
    index = {bucket: i for i, bucket in enumerate(buckets)}
    rows = (
        Message.objects.filter(received_at__gte=buckets[0])
        .order_by()
        .annotate(hour=TruncHour("received_at"))
        .values("queue", "hour")
        .annotate(n=Count("id"))
    )
    series: dict[str, list[int]] = {}
    for row in rows:
        slot = index.get(row["hour"])
        if slot is not None:
            series.setdefault(row["queue"], [0] * hours)[slot] += row["n"]
    return buckets, series
