"""Failure groups: parked messages grouped by their fingerprint, over a window or all time.

Bounded by an index: a window by `received_at` (msg_received), one group by msg_group_id.
None counts the whole message table per request.
"""

from datetime import datetime, timedelta

from django.db.models import Count, Max, Min
from django.utils import timezone

from dlq.models import KnownGroup, Message, Status

# Windows the groups page offers: the label in the URL and how far back it reaches.
WINDOWS = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7),
           "30d": timedelta(days=30)}  # fmt: skip
DEFAULT_WINDOW = "7d"


# The groups page's filters: each an exact match on the column of the same name.
FILTERS = ("queue", "vhost", "message_type", "exception_type")


def failure_groups(since: datetime | None, limit: int = 50, **filters: str) -> list:
    """Parked messages received since `since`, grouped by fingerprint, biggest first: count,
    first and last arrival in the window, the newest message as a sample, its name, and when
    the console first saw the group at all. `filters` are FILTERS; an empty one is absent."""
    qs = Message.objects.filter(status=Status.PARKED).exclude(group="").order_by()
    if since is not None:
        qs = qs.filter(received_at__gte=since)
    qs = qs.filter(**{name: value for name, value in filters.items() if value})
    rows = list(
        qs.values("group")
        .annotate(
            count=Count("id"),
            first=Min("received_at"),
            last=Max("received_at"),
            sample_id=Max("id"),
        )
        .order_by("-count", "group")[:limit]
    )
    _attach_samples(rows)
    return rows


def _attach_samples(rows: list[dict]) -> None:
    """What identifies each group, from its sample, and the group's first sighting ever."""
    samples = Message.objects.filter(pk__in=[r["sample_id"] for r in rows]).only(
        "vhost",
        "queue",
        "death_reason",
        "exception_type",
        "exception_message",
        "failed_queue",
        "message_type",
    )
    by_id = {m.pk: m for m in samples}
    known = dict(
        KnownGroup.objects.filter(group__in=[r["group"] for r in rows]).values_list(
            "group", "first_seen_at"
        )
    )
    for row in rows:
        row["sample"] = by_id.get(row["sample_id"])
        row["name"] = group_name(row["sample"]) if row["sample"] else row["group"]
        row["first_seen_ever"] = known.get(row["group"])


def group_name(m: Message) -> str:
    """What failed, as a reader says it: the message type, then the exception type and the
    first line of its message, or the death reason and the queue it died in."""
    if m.exception_type or m.exception_message:
        first_line = (m.exception_message or "").strip().split("\n", 1)[0][:120]
        failure = ": ".join(filter(None, [m.exception_type, first_line]))
    else:
        failure = " in ".join(filter(None, [m.death_reason or "no death reason", m.failed_queue]))
    return " · ".join(filter(None, [m.message_type, failure]))


def window_start(label: str | None) -> datetime | None:
    """Where a groups window begins; None for "all"."""
    span = WINDOWS.get(label or DEFAULT_WINDOW)
    return timezone.now() - span if span else None
