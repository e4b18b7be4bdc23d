"""Running a bulk job: its frozen selection worked through in batches, like an outbox.

A job (dlq/jobs/control.py) is worked through in batches of pending items
(dlq/jobs/batches.py):

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
is settled, the rest stays `publishing` and the job goes on at once through the next node
(_replay_on_nodes), publishing those first. Nothing is marked
`replayed` without a confirm, and nothing whose confirm was recorded is published again.

A message the broker nacks is published again, with the same replay id, after growing
pauses, before it is recorded `nacked` (_retry_nacked): a nack is also what a quorum queue
answers while its cluster elects a new leader, a moment a job rides through as it does a
lost connection.
"""

import contextlib
import logging
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import Q

from dlq import audit
from dlq.actions import replay
from dlq.broker import amqp
from dlq.broker.publisher import CHANNEL_CLOSED, ConfirmPublisher
from dlq.jobs import steps
from dlq.jobs.batches import (
    Batch,
    batch_size,
    cancel_requested,
    claim_next,
    count_done,
    set_items,
    settle_batch,
    tally,
)
from dlq.jobs.publishers import Publishers, VhostRefused
from dlq.models import Message, Status
from dlq.models.actions import AuditAction, ItemState, Job, JobItem, JobStatus, Outcome

log = logging.getLogger("dlq.jobs")
FINISHER = "worker"  # the audit actor of a job's end


def claim_job(job_id: int, due: datetime | None = None) -> bool:
    """Take the job for this worker: pending, or running with a stale heartbeat (its worker
    died), or waiting for the turn `due` names (its `wake_at`: one task carries each turn),
    or waiting for a turn overdue by DLQ_JOB_STALE_SECONDS (its task was lost). The
    conditional UPDATE makes sure two workers never run one job. A job cancelled
    while its worker was dead is taken too, to settle what that worker left in flight.

    A waiting job taken stays `waiting` while its turn looks at returns and consumers
    (dlq/jobs/steps.py): its wake_at moves a stale period ahead, so a worker that dies in
    the turn leaves it to be taken as overdue."""
    now = datetime.now(UTC)
    stale = now - timedelta(seconds=settings.DLQ_JOB_STALE_SECONDS)
    turn = Q(wake_at=due) if due is not None else Q(wake_at__lt=stale)
    lease = now + timedelta(seconds=settings.DLQ_JOB_STALE_SECONDS)
    if Job.objects.filter(turn, pk=job_id, status=JobStatus.WAITING).update(wake_at=lease):
        return True
    # status_detail: what a dead worker was waiting for is not this one's business.
    taken = Job.objects.filter(
        Q(status=JobStatus.PENDING, cancel_requested=False)
        | Q(status=JobStatus.RUNNING, heartbeat_at__lt=stale),
        pk=job_id,
    ).update(status=JobStatus.RUNNING, heartbeat_at=now, status_detail="")
    if taken:
        Job.objects.filter(pk=job_id, started_at__isnull=True).update(started_at=now)
    return bool(taken)


def run_job(job_id: int, publisher_factory=None, due: datetime | None = None) -> str:
    """Work the job to its end or its next wait; returns its final status, 'waiting' (its
    next turn is at its wake_at), 'busy' while another worker holds it (its heartbeat is
    fresh), 'not due' for a waiting job whose turn this is not, or 'interrupted' when the
    broker went away."""
    if not claim_job(job_id, due):
        status = Job.objects.filter(pk=job_id).values_list("status", flat=True).first()
        if status == JobStatus.WAITING:
            return "not due"
        return "busy" if status in (JobStatus.PENDING, JobStatus.RUNNING) else str(status)
    job = Job.objects.get(pk=job_id)
    job.totals = job.outcomes
    log.info("job turn", extra={"job": job_id, "action": job.action, "step": job.step})
    try:
        with Heartbeat(job_id):
            if job.action == "discard":
                return _run_discard(job)
            factory = publisher_factory or _publisher
            return steps.turn(job, lambda: _replay_on_nodes(job, factory), _finish)
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
    job does (batches.claim_next). A cluster where no node answers interrupts the job."""
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
    return ConfirmPublisher(
        settings.DLQ_BROKER_URL, "dlq-replay-job", window=settings.DLQ_REPLAY_WINDOW, vhost=vhost
    )


def _next_items(job: Job, after: int = 0) -> list[JobItem]:
    items = job.items.filter(state=ItemState.PENDING, id__gt=after).order_by("id")
    return list(items[: batch_size(job)])


def _finish(job: Job, status: str, why: str = "") -> str:
    """The job's end, and its row in the audit trail with what became of its messages (the
    operator who started it has the job_create row; this one is the worker's). `why` is
    its status_detail: why it was aborted."""
    with transaction.atomic():
        Job.objects.filter(pk=job.pk).update(
            status=status, finished_at=datetime.now(UTC), status_detail=why, wake_at=None
        )
        ended = Job.objects.get(pk=job.pk)
        counts = {"total": ended.total, "done": ended.done, "failed": ended.failed}
        detail = {"action": ended.action, "status": status, **counts, "outcomes": ended.outcomes}
        if ended.action == "replay":
            detail.update(step=ended.step, returned=ended.returned)
        if why:
            detail["why"] = why
        audit.record(FINISHER, AuditAction.JOB_FINISH, job_id=job.pk, detail=detail)
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
    job.__dict__.pop("pause_detail", None)  # a run after a failover counts errors afresh
    job.error_run = ("", 0)
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
            if job.__dict__.get("pause_detail"):
                break  # `batch` was claimed, not published: _release puts it back
        if settling is not None:
            settling.result()
    finally:
        for pool in (claimer, settler):
            pool.submit(_close_connection)  # each thread's own database connection
            pool.shutdown(wait=True)
    if why := job.__dict__.get("pause_detail"):
        _release(job)
        left = job.items.filter(state=ItemState.PENDING).exists()
        if left and not cancel_requested(job):  # nothing left: it ends as it would have
            return _pause(job, why, job.pause_error)
    if cancel_requested(job):
        return _finish(job, JobStatus.CANCELLED)
    if why := job.__dict__.get("abort_detail"):  # batches.claim_next stopped claiming
        return _finish(job, JobStatus.ABORTED, why)
    if job.items.filter(state=ItemState.PENDING).exists():
        return steps.STEP_OVER  # the step's last batch is settled; steps.turn goes on
    return _finish(job, JobStatus.DONE)


def _error_run(job: Job, outgoing: list, results: dict) -> None:
    """Count the run of identical broker errors (any outcome but a confirm, the same detail),
    in publish order and across batches; once it is DLQ_JOB_PAUSE_AFTER_ERRORS long the job
    is to pause (`pause_detail`): a missing exchange fails every message alike, and a job
    grinding through thousands of the same NOT_FOUND helps nobody. A confirm ends the run;
    nacks are left to _retry_nacked (a refusal is mostly a moment: a leader election).
    A publish not tried (no result) is not counted, nor the error the job was resumed past."""
    limit = settings.DLQ_JOB_PAUSE_AFTER_ERRORS
    error, count = job.__dict__.get("error_run", ("", 0))
    for item in outgoing:
        outcome, detail = results.get(item.key, (None, ""))
        if outcome in (None, Outcome.NACKED) or (detail and _plain_error(detail) == job.paused_on):
            continue  # not tried, a nack (its own retries: _retry_nacked), or resumed past
        if outcome == Outcome.CONFIRMED:
            error, count = "", 0
            continue
        error, count = (error, count + 1) if detail == error else (detail, 1)
        if limit and count >= limit and not job.__dict__.get("pause_detail"):
            job.pause_detail, job.pause_error = _paused(count, detail), _plain_error(detail)
    job.error_run = (error, count)


def _paused(count: int, detail: str) -> str:
    return f"{PAUSED} {count} identical errors: {_plain_error(detail)}; resume or cancel"


PAUSED = "paused after"  # how a pause's status_detail begins


def _plain_error(detail: str) -> str:
    """The broker's own words in an error detail: `NOT_FOUND - no exchange 'x' in vhost '/'`
    out of pika's `channel closed: ChannelClosedByBroker: (404) "NOT_FOUND - ..."`."""
    said = re.search(r"\(\d+\) ['\"](.*)['\"]$", detail)
    return said.group(1) if said else detail


def _release(job: Job) -> None:
    """What a pausing job left claimed goes back: its items `pending`, their messages
    `parked` (one transaction). The items keep their replay ids: a publish a channel close
    cut off has an unknown fate, so when the job is resumed it goes out again with the same
    `dlq-replay-id`, as after a killed worker."""
    with transaction.atomic():
        claimed = job.items.filter(state=ItemState.PUBLISHING)
        Message.objects.filter(pk__in=claimed.values("message_id"), status=Status.REPLAYING).update(
            status=Status.PARKED
        )
        claimed.update(state=ItemState.PENDING)


def _pause(job: Job, why: str, error: str) -> str:
    """The job waits for its operator: `waiting` with no next turn (wake_at empty), so no
    countdown task takes one and beat's resume_jobs, which takes overdue turns only, leaves
    it be. It holds no connection (its publishers close as this run ends). The operator
    resumes it (control.resume_job) or cancels it; resumed, it goes on past `error` (kept as
    `paused_on`) and pauses again only on another."""
    Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING).update(
        status=JobStatus.WAITING, status_detail=why, wake_at=None, paused_on=error
    )
    log.warning("job paused after identical errors", extra={"job": job.pk, "why": why})
    return JobStatus.WAITING


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
        answered = publisher.publish(
            outgoing, timeout=_timeout(job, len(outgoing)), rate_per_s=job.rate_per_s
        )
        answered = _isolate(job, outgoing, answered, publisher)
        results.update(_retry_nacked(job, outgoing, answered, publisher))
        if publishers.broken:
            break  # a lost connection is the node's, not the messages': failover, no pause
        _error_run(job, outgoing, results)
        if job.__dict__.get("pause_detail"):
            break  # the batch's other vhosts stay `publishing`: released by the pause
    return results


def _timeout(job: Job, n: int) -> float:
    """How long `n` publishes may wait for their confirms (at the job's rate, twice that)."""
    return max(60.0, 2 * n / job.rate_per_s) if job.rate_per_s else 60.0


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
        if results[item.key][0] == Outcome.ERROR and results[item.key][1].startswith(CHANNEL_CLOSED)
    ]
    if len(closed) < 2:
        return results  # nothing in flight with it: its own error says it all
    log.warning("a message closed the channel; publishing the batch's rest one by one",
                extra={"messages": len(closed)})  # fmt: skip
    limit = settings.DLQ_JOB_PAUSE_AFTER_ERRORS
    started, last, run = time.monotonic(), "", 0
    for n, item in enumerate(closed, start=1):
        if publisher.broken:
            break  # the connection, not a message: the job resumes later
        if limit and run >= limit and _plain_error(last) != job.paused_on:
            # The same error again and again (a missing exchange): the job pauses. The rest
            # are not tried again; with no result they stay `publishing` and the pause puts
            # them back (_release), to go out when the job is resumed.
            job.pause_detail, job.pause_error = _paused(run, last), _plain_error(last)
            for rest in closed[n - 1 :]:
                del results[rest.key]
            break
        results.update(publisher.publish([item], timeout=30.0))
        outcome, detail = results[item.key]
        run = 0 if outcome == Outcome.CONFIRMED else run + 1 if detail == last else 1
        last = detail
        _pace(job, n, started)  # the job's rate limit holds for these too
    return results


NACK_FIRST_PAUSE = 0.5  # seconds; doubling, DLQ_REPLAY_NACK_RETRIES times (7.5 s in all)


def nack_pauses() -> list[float]:
    """The pauses before each new try of the messages the broker nacked."""
    return [NACK_FIRST_PAUSE * 2**n for n in range(settings.DLQ_REPLAY_NACK_RETRIES)]


def _retry_nacked(job: Job, outgoing: list, results: dict, publisher) -> dict:
    """A nack means the broker did not take the message (shared/rabbitmq-facts.md): a queue
    it routes to is full (`x-overflow: reject-publish`), or a quorum queue had no leader
    when the channel first published to it (its node had just died: 3.10 then nacks on that
    channel for good, see ConfirmPublisher.renew_channel). The nacked messages are published
    again on a new channel, at the job's rate and with the same replay ids, after each of
    nack_pauses(); what the broker still refuses after the last is recorded `nacked` (the
    message stays `parked`).

    The pauses are spent once per refusal, not once per batch: when they run out, later
    batches' nacks are recorded at once until a batch goes through without one, so a queue
    that stays full costs a job one wait. Cancelling stops the retries. A connection lost
    meanwhile leaves the nacked messages `publishing`: the job publishes them again through
    the next node (or when it resumes), as it does the rest of the batch."""
    nacked = _nacked(outgoing, results)
    if not nacked:
        job.refusing = False  # the broker takes messages again
        return results
    if job.__dict__.get("refusing"):
        return results
    for attempt, pause in enumerate(nack_pauses(), start=1):
        if cancel_requested(job):
            break
        _waiting(job, len(nacked), attempt, pause)
        publisher.wait(pause)
        publisher.renew_channel()  # 3.10 keeps nacking on the channel that was refused
        if publisher.broken:
            break
        results.update(publisher.publish(nacked, timeout=_timeout(job, len(nacked)),
                                         rate_per_s=job.rate_per_s))  # fmt: skip
        nacked = _nacked(nacked, results)
        if not nacked:
            break
    _waiting(job, 0)
    if publisher.broken:
        for item in nacked:  # refused, so not stored: safe to publish again on another node
            results[item.key] = (Outcome.ERROR, f"not sent again after a nack: {NACK_BROKEN}")
        return results
    job.refusing = bool(nacked)
    if nacked:
        log.warning("the broker kept refusing messages; recorded as nacked",
                    extra={"job": job.pk, "messages": len(nacked)})  # fmt: skip
    else:
        log.info("the broker took the messages it had nacked", extra={"job": job.pk})
    return results


NACK_BROKEN = "the connection was lost before its next try"


def _nacked(outgoing: list, results: dict) -> list:
    return [item for item in outgoing if results.get(item.key, ("",))[0] == Outcome.NACKED]


def _waiting(job: Job, refused: int, attempt: int = 0, pause: float = 0.0) -> None:
    """Say on the job why it is not moving (its status_detail), or that it moves again."""
    detail = ""
    if refused:
        detail = (
            f"waiting for the broker to take messages again: it refused {refused} (basic.nack:"
            f" a queue full, or a quorum queue electing a leader); next try in {pause:g} s"
            f" ({attempt} of {settings.DLQ_REPLAY_NACK_RETRIES})"
        )
    Job.objects.filter(pk=job.pk).update(status_detail=detail)
