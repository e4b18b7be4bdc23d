"""Failure groups over a window (the overview's top groups), and one group's header.

Bounded by an index: a window by `received_at` (msg_received), one group by msg_group_id.
None counts the whole message table per request (the worklist reads tallies: worklist.py).
"""

from datetime import datetime

from django.db.models import Count, Max, Min

from dlq.messages.groups import NAME_FIELDS, group_name
from dlq.models import KnownGroup, Message, Status


def failure_groups(since: datetime, limit: int = 50) -> list:
    """Parked messages received since `since`, grouped by fingerprint, biggest first: count,
    first and last arrival in the window, the newest message as a sample, its name, and when
    the console first saw the group at all."""
    qs = Message.objects.filter(status=Status.PARKED, received_at__gte=since).exclude(group="")
    qs = qs.order_by()
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


def group_summary(group: str) -> dict | None:
    """One group's header: its name and first line of exception, counts by status, first and
    last arrival, the queues it is parked in; None when none of its messages is stored. Each
    a query over the group's own rows (msg_group_id)."""
    rows = Message.objects.filter(group=group).order_by()
    counts = dict(rows.values_list("status").annotate(n=Count("id")))
    if not counts:
        return None
    newest = rows.order_by("-id").only("vhost", *NAME_FIELDS).first()
    span = rows.aggregate(first=Min("received_at"), last=Max("received_at"))
    queues = sorted(set(rows.values_list("vhost", "queue").distinct()))
    return {
        "group": group,
        "name": group_name(newest),
        "sample": newest,
        # the whole exception message, when there is more to it than the name's first line
        "exception": message if "\n" in (message := newest.exception_message.strip()) else "",
        "counts": [(status, counts[status]) for status in Status.values if status in counts],
        "parked": counts.get(Status.PARKED, 0),
        "total": sum(counts.values()),
        "first": span["first"],
        "last": span["last"],
        "first_seen_ever": KnownGroup.objects.filter(group=group)
        .values_list("first_seen_at", flat=True)
        .first(),
        "queues": queues,
    }
