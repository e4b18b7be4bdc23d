"""A replay job's returns: its replayed messages that died again and were stored again.

A replay carries `dlq-origin-id` (dlq/actions/replay.py); the drainer stores a message that
comes back with it as a new row whose `previous` is the replayed one (dlq/drain/store.py).
A return of job J is such a row whose `previous` is a message J confirmed. It was stored
after J published it, so its id is above the highest id at J's freeze (`returns_after`):
the lookup walks the partial index msg_returned (only rows that came back are in it) from
there, and each row's item by jobitem_unique. It costs the returns since the job began,
not the job's size nor the table's.
"""

import time

from django.db import connection

from dlq.models import Message
from dlq.models.actions import ItemState, Job, JobItem

CHECK_EVERY = 0.5  # seconds between two counts while a step publishes


def count(job: Job) -> dict[str, int]:
    """How many of the job's replayed messages came back, by the queue where each died
    again (a message that came back twice counts once)."""
    q = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT m.failed_queue, count(DISTINCT m.previous_id)"
            f" FROM {q(Message._meta.db_table)} m"
            f" JOIN {q(JobItem._meta.db_table)} i ON i.message_id = m.previous_id"
            " WHERE m.previous_id IS NOT NULL AND m.id > %s AND i.job_id = %s AND i.state = %s"
            " GROUP BY m.failed_queue",
            [job.returns_after, job.pk, ItemState.DONE.value],
        )
        return {queue or "(unknown queue)": n for queue, n in cursor.fetchall()}


def by_step(job: Job) -> dict[int, int]:
    """How many of the job's replayed messages came back, by the step that published them
    (the same lookup as count())."""
    q = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.step, count(DISTINCT m.previous_id)"
            f" FROM {q(Message._meta.db_table)} m"
            f" JOIN {q(JobItem._meta.db_table)} i ON i.message_id = m.previous_id"
            " WHERE m.previous_id IS NOT NULL AND m.id > %s AND i.job_id = %s AND i.state = %s"
            " GROUP BY i.step",
            [job.returns_after, job.pk, ItemState.DONE.value],
        )
        return {step or 0: n for step, n in cursor.fetchall()}


def update(job: Job) -> dict[str, int]:
    """Count the returns and keep the total on the job (`returned`, read by the API)."""
    by_queue = count(job)
    job.returned = sum(by_queue.values())
    Job.objects.filter(pk=job.pk).exclude(returned=job.returned).update(returned=job.returned)
    job.returns_checked = time.monotonic()
    return by_queue


def exceeded(job: Job) -> str:
    """Why the job must stop ("" when it need not): more returns than it allows. Counts
    them either way (`returned`)."""
    by_queue = update(job)
    if job.max_returns is None or job.returned <= job.max_returns:
        return ""
    where = ", ".join(f"{n} from {queue}" for queue, n in sorted(by_queue.items()))
    return (
        f"aborted: {job.returned} replayed {_messages(job.returned)} came back ({where}),"
        f" more than the {job.max_returns} allowed; the rest stay parked"
    )


def exceeded_lately(job: Job) -> str:
    """exceeded(), at most every CHECK_EVERY seconds (called before each claim)."""
    if time.monotonic() - job.__dict__.get("returns_checked", 0.0) < CHECK_EVERY:
        return job.__dict__.get("abort_detail", "")
    job.abort_detail = exceeded(job)
    return job.abort_detail


def _messages(n: int) -> str:
    return "message" if n == 1 else "messages"
