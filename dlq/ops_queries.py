"""Reading for the overview, groups, jobs and audit pages.

Every query here is bounded by an index: arrivals by `received_at` (msg_received) over a
recent window, groups over a window or one group (msg_group_id), jobs and audit rows
newest first by id. None counts the whole message table per request.
"""

from datetime import datetime, timedelta

from django.db.models import Count, Max, Min, Q
from django.db.models.functions import TruncHour
from django.utils import timezone

from dlq.models import KnownGroup, Message, Status
from dlq.ops_models import AuditEntry, ItemState, Job, JobItem, JobStatus, Replay

ACTIVE_JOBS = (JobStatus.PENDING, JobStatus.RUNNING)
# Windows the groups page offers: the label in the URL and how far back it reaches.
WINDOWS = {"1h": timedelta(hours=1), "24h": timedelta(days=1), "7d": timedelta(days=7),
           "30d": timedelta(days=30)}  # fmt: skip
DEFAULT_WINDOW = "7d"


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


def failure_groups(since: datetime | None, queue: str | None = None, limit: int = 50) -> list:
    """Parked messages received since `since`, grouped by fingerprint, biggest first: count,
    first and last arrival in the window, the newest message as a sample, and when the
    console first saw the group at all."""
    qs = Message.objects.filter(status=Status.PARKED).exclude(group="").order_by()
    if since is not None:
        qs = qs.filter(received_at__gte=since)
    if queue:
        qs = qs.filter(queue=queue)
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
        "queue", "death_reason", "exception_type", "exception_message", "failed_queue"
    )
    by_id = {m.pk: m for m in samples}
    known = dict(
        KnownGroup.objects.filter(group__in=[r["group"] for r in rows]).values_list(
            "group", "first_seen_at"
        )
    )
    for row in rows:
        row["sample"] = by_id.get(row["sample_id"])
        row["first_seen_ever"] = known.get(row["group"])


def active_jobs() -> list[Job]:
    return list(Job.objects.filter(status__in=ACTIVE_JOBS).order_by("-id"))


def finished_jobs():
    return Job.objects.exclude(status__in=ACTIVE_JOBS).order_by("-id")


def recent_audit(limit: int = 10) -> list[AuditEntry]:
    return list(AuditEntry.objects.order_by("-id")[:limit])


def failed_items(job: Job, limit: int = 50) -> list[dict]:
    """The job's items that did not succeed, with the broker's detail for replays."""
    items = list(
        JobItem.objects.filter(job=job, state=ItemState.FAILED)
        .order_by("id")
        .values("message_id", "outcome")[:limit]
    )
    details = dict(
        Replay.objects.filter(job=job, message_id__in=[i["message_id"] for i in items])
        .exclude(outcome="confirmed")
        .order_by("id")
        .values_list("message_id", "detail")
    )
    for item in items:
        item["detail"] = details.get(item["message_id"], "")
    return items


def window_start(label: str | None) -> datetime | None:
    """Where a groups window begins; None for "all"."""
    span = WINDOWS.get(label or DEFAULT_WINDOW)
    return timezone.now() - span if span else None
