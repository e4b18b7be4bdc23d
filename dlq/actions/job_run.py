"""Running a bulk job: its frozen selection worked through in batches, like an outbox.

A job (dlq/actions/jobs.py) is worked through in batches of pending items
(dlq/actions/job_batch.py):

1. claim (one transaction): each parked message becomes `replaying`, its item `publishing`
   with a replay id;
2. publish the batch with asynchronous confirms (a window of outstanding publishes);
3. settle (one transaction): a confirm with no return makes the message `replayed`, anything
   else puts it back to `parked`; the Replay rows, items, counters and outcomes are written.

While batch k is published, one thread claims batch k+1 and another settles batch k-1 (each
in its own transactions, on its own connection), so the database and the broker work at the
same time. Batch k+1 is committed as `publishing` before its first publish. On PostgreSQL the
writes of a claim and of a settle are one statement each (set-based, over arrays). A
heartbeat thread keeps the job's heartbeat fresh while the worker lives, so only a dead
worker's job is taken over (after DLQ_JOB_STALE_SECONDS).

A worker killed between 1 and 3 leaves items `publishing`: at most three batches, the one
being settled (all confirmed, the settle not yet committed), the one being published and the
one claimed next. The next run publishes those again with the same replay id, because the
broker may or may not have received them: the first two (at most 2 x BATCH messages, or two
seconds' worth at a job's rate limit) are the only possible duplicates; the third was never
sent. Settling batch k-1 while batch k is published is what costs that second batch of
possible duplicates, and it is what lets the database and the broker work at once.
A broker connection lost mid-batch is the same: what the broker answered
is settled, the rest stays `publishing` and the job is resumed later. Nothing is marked
`replayed` without a confirm, and nothing whose confirm was recorded is published again.
"""

import contextlib
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import Q

from dlq.actions import replay
from dlq.actions.job_batch import (
    Batch,
    batch_size,
    cancel_requested,
    claim_next,
    count_done,
    set_items,
    settle_batch,
    tally,
)
from dlq.actions.job_publishers import Publishers, VhostRefused
from dlq.broker import amqp
from dlq.models import Message, Status
from dlq.models.actions import ItemState, Job, JobItem, JobStatus, Outcome

log = logging.getLogger("dlq.jobs")


def claim_job(job_id: int) -> bool:
    """Take the job for this worker: pending, or running with a stale heartbeat (its worker
    died). The conditional UPDATE makes sure two workers never run one job. A job cancelled
    while its worker was dead is taken too, to settle what that worker left in flight."""
    now = datetime.now(UTC)
    stale = now - timedelta(seconds=settings.DLQ_JOB_STALE_SECONDS)
    taken = Job.objects.filter(
        Q(status=JobStatus.PENDING, cancel_requested=False)
        | Q(status=JobStatus.RUNNING, heartbeat_at__lt=stale),
        pk=job_id,
    ).update(status=JobStatus.RUNNING, heartbeat_at=now)
    if taken:
        Job.objects.filter(pk=job_id, started_at__isnull=True).update(started_at=now)
    return bool(taken)


def run_job(job_id: int, publisher_factory=None) -> str:
    """Work the job to its end; returns its final status, 'busy' while another worker
    holds it (its heartbeat is fresh), or 'interrupted' when the broker went away."""
    if not claim_job(job_id):
        status = Job.objects.filter(pk=job_id).values_list("status", flat=True).first()
        return "busy" if status in (JobStatus.PENDING, JobStatus.RUNNING) else str(status)
    job = Job.objects.get(pk=job_id)
    job.totals = job.outcomes
    log.info("job started", extra={"job": job_id, "action": job.action, "total": job.total})
    try:
        with Heartbeat(job_id):
            if job.action == "discard":
                return _run_discard(job)
            return _replay_on_nodes(job, publisher_factory or _publisher)
    except (ConnectionError, *amqp.AllErrors) as e:
        # The broker is gone: leave the job running; the heartbeat goes stale and a later
        # run resumes it (publishing items are published again, the window of duplicates).
        log.warning("job interrupted by the broker", extra={"job": job_id, "error": repr(e)})
        return "interrupted"


def _replay_on_nodes(job: Job, factory) -> str:
    """Replay; a connection lost mid-job is replaced at once, up to once per node of the
    cluster (a new publisher begins with the next node: dlq/broker/amqp.py), so a node that
    dies costs the batch in flight, not a wait of DLQ_JOB_STALE_SECONDS to be resumed. The
    rerun publishes what was left `publishing` first, with the same replay ids, as a resumed
    job does (job_batch.claim_next). A cluster where no node answers interrupts the job."""
    failovers = len(amqp.nodes(settings.DLQ_BROKER_URL)) - 1
    while True:
        # One publisher per vhost, opened before the first claim (_open_publishers).
        publishers = Publishers(factory)
        try:
            return _run_replay(job, publishers)
        except (ConnectionError, *amqp.AllErrors) as e:
            if not failovers or not publishers.broken:
                raise
            failovers -= 1
            log.warning("job lost its broker connection, going on through the next node",
                        extra={"job": job.pk, "error": repr(e)})  # fmt: skip
            job.resuming = True  # claim what was left `publishing` first
        finally:
            publishers.close()


class Heartbeat:
    """Keeps the job's heartbeat fresh while this worker lives, however long a batch takes
    (a slow or blocked broker), so only a dead worker's job is taken over."""

    def __init__(self, job_id: int):
        self.job_id = job_id
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, name="dlq-job-heartbeat", daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=10)

    def _beat(self):
        interval = max(0.2, settings.DLQ_JOB_STALE_SECONDS / 4)
        try:
            while not self.stop.wait(interval):
                Job.objects.filter(pk=self.job_id, status=JobStatus.RUNNING).update(
                    heartbeat_at=datetime.now(UTC)
                )
        except DatabaseError as e:  # the settle transactions report it; the beat just stops
            log.warning("job heartbeat stopped", extra={"job": self.job_id, "error": repr(e)})
        finally:
            connection.close()


def _publisher(vhost: str | None = None):
    """A job's publisher in `vhost` (default: DLQ_BROKER_URL's)."""
    return amqp.ConfirmPublisher(
        settings.DLQ_BROKER_URL, "dlq-replay-job", window=settings.DLQ_REPLAY_WINDOW, vhost=vhost
    )


def _next_items(job: Job, after: int = 0) -> list[JobItem]:
    items = job.items.filter(state=ItemState.PENDING, id__gt=after).order_by("id")
    return list(items[: batch_size(job)])


def _finish(job: Job, status: str) -> str:
    Job.objects.filter(pk=job.pk).update(status=status, finished_at=datetime.now(UTC))
    log.info("job finished", extra={"job": job.pk, "status": status})
    return status


def _run_discard(job: Job) -> str:
    after = 0
    while True:
        if cancel_requested(job):
            return _finish(job, JobStatus.CANCELLED)
        items = _next_items(job, after)
        if not items:
            return _finish(job, JobStatus.DONE)
        _discard_batch(job, items)
        after = items[-1].pk


def _discard_batch(job: Job, items: list[JobItem]) -> None:
    started = time.monotonic()
    ids = [item.message_id for item in items]
    with transaction.atomic():
        parked = set(
            Message.objects.select_for_update()
            .filter(pk__in=ids, status=Status.PARKED)
            .values_list("id", flat=True)
        )
        Message.objects.filter(pk__in=parked).update(status=Status.DISCARDED)
        set_items(items, lambda item: "discarded" if item.message_id in parked else "skipped")
        count_done(job, tally(items), done=len(parked), failed=len(items) - len(parked))
    _pace(job, len(items), started)


def _pace(job: Job, n: int, started: float) -> None:
    if job.rate_per_s:
        time.sleep(max(0.0, n / job.rate_per_s - (time.monotonic() - started)))


def _run_replay(job: Job, publisher: Publishers) -> str:
    """Claim, publish, settle, overlapped: while this thread publishes batch k, one thread
    claims batch k+1 and another settles batch k-1, each on its own database connection.
    `publisher` holds one publisher per vhost; `broken` when any of them is."""
    limits = publisher.limits  # per vhost: the claim builds each message for its own
    job.overrides = replay.load_overrides()  # read once per run, not once per message
    _open_publishers(job, publisher)
    claimer = ThreadPoolExecutor(1, thread_name_prefix="dlq-job-claim")
    settler = ThreadPoolExecutor(1, thread_name_prefix="dlq-job-settle")
    try:
        batch = claimer.submit(claim_next, job, 0, limits).result()
        settling = None
        while batch is not None:
            ahead = claimer.submit(claim_next, job, batch.items[-1].pk, limits)
            results = _publish(job, batch, publisher)
            if settling is not None:
                settling.result()
            if publisher.broken:
                ahead.result()  # committed as `publishing`: published when the job resumes
                settler.submit(settle_batch, job, batch, results, True).result()
                raise ConnectionError("the broker connection was lost during the batch")
            settling = settler.submit(settle_batch, job, batch, results)
            batch = ahead.result()
        if settling is not None:
            settling.result()
    finally:
        for pool in (claimer, settler):
            pool.submit(_close_connection)  # each thread's own database connection
            pool.shutdown(wait=True)
    status = JobStatus.CANCELLED if cancel_requested(job) else JobStatus.DONE
    return _finish(job, status)


def _open_publishers(job: Job, publishers: Publishers) -> None:
    """A publisher for each vhost the job's unfinished messages came from, opened before
    the first claim: a claim holds its messages locked until it commits (an edit or a
    discard of one of them waits), and opening a connection may take a slow node's whole
    timeout. A vhost the broker refuses is left to the claims, which fail its messages."""
    unfinished = job.items.filter(state__in=(ItemState.PENDING, ItemState.PUBLISHING))
    for vhost in unfinished.order_by().values_list("message__vhost", flat=True).distinct():
        with contextlib.suppress(VhostRefused):
            publishers.get(vhost)


def _close_connection() -> None:
    connection.close()  # looked up in the calling thread: that thread's own connection


def _publish(job: Job, batch: Batch, publishers: Publishers) -> dict:
    """Each message into its own vhost: the batch's messages grouped by vhost, one group
    after another (so the job's rate limit holds over the batch). A group whose vhost's
    connection broke stops the batch: what was not answered stays `publishing`."""
    results = {}
    for vhost, outgoing in _by_vhost(batch).items():
        if publishers.broken:
            break
        publisher = publishers.ready(vhost)  # opened before the claim that built these
        timeout = max(60.0, 2 * len(outgoing) / job.rate_per_s) if job.rate_per_s else 60.0
        answered = publisher.publish(outgoing, timeout=timeout, rate_per_s=job.rate_per_s)
        results.update(_isolate(job, outgoing, answered, publisher))
    return results


def _by_vhost(batch: Batch) -> dict[str, list]:
    groups: dict[str, list] = {}
    for out in batch.outgoing:
        groups.setdefault(batch.vhosts[out.key], []).append(out)
    return groups


def _isolate(job: Job, outgoing: list, results: dict, publisher) -> dict:
    """A message the broker refuses (a property it will not take) closes the channel, and
    everything in flight with it ends in error. Those are published again one at a time on
    the reopened channel, so only the refused one fails. One that had reached its queue
    before the close arrives twice (same dlq-replay-id); none is lost."""
    closed = [
        item
        for item in outgoing
        if results[item.key][0] == Outcome.ERROR
        and results[item.key][1].startswith(amqp.CHANNEL_CLOSED)
    ]
    if len(closed) < 2:
        return results  # nothing in flight with it: its own error says it all
    log.warning("a message closed the channel; publishing the batch's rest one by one",
                extra={"messages": len(closed)})  # fmt: skip
    started = time.monotonic()
    for n, item in enumerate(closed, start=1):
        if publisher.broken:
            break  # the connection, not a message: the job resumes later
        results.update(publisher.publish([item], timeout=30.0))
        _pace(job, n, started)  # the job's rate limit holds for these too
    return results
