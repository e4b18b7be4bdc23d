"""Bulk replay and discard: a frozen selection worked through in batches, like an outbox.

Creating a job writes one JobItem per selected message (a filter is frozen at that instant:
only messages received up to it). Running it takes batches of pending items:

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

import json
import logging
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import F, Q

from dlq import amqp, audit, replay
from dlq.actions import ActionError, Conflict, NotFound
from dlq.models import Message, Status
from dlq.ops_models import AuditAction, ItemState, Job, JobItem, JobStatus, Outcome, Replay
from dlq.queries import filter_messages

log = logging.getLogger("dlq.jobs")
ACTIONS = ("replay", "discard")
MAX_IDS = 100_000
BATCH = 1000


# --- creating a job -----------------------------------------------------------------------


def _check_target(target) -> None:
    if target in replay.TARGETS:
        return
    if isinstance(target, dict):
        try:
            replay.resolve(None, target)
            return
        except replay.ReplayError as e:
            raise ActionError({"target": [str(e)]}) from None
    raise ActionError({"target": ['must be "original", "failed_queue" or an exchange and key']})


def _validate(action, ids, filters, target, rate_per_s, reason) -> None:
    errors = {}
    if action not in ACTIONS:
        errors["action"] = [f"must be one of {', '.join(ACTIONS)}"]
    if (ids is None) == (filters is None):
        errors["ids"] = ["give either ids or filter"]
    elif ids is not None and (not isinstance(ids, list | tuple) or not 0 < len(ids) <= MAX_IDS):
        errors["ids"] = [f"give a list of 1 to {MAX_IDS} ids"]
    elif ids is not None and not all(type(i) is int for i in ids):
        errors["ids"] = ["ids are whole numbers"]
    elif filters is not None and not isinstance(filters, dict):
        errors["filter"] = ["must be an object with the message list's filters"]
    if rate_per_s is not None and not 1 <= rate_per_s <= 100_000:
        errors["rate_per_s"] = ["must be between 1 and 100000, or null"]
    if not isinstance(reason, str) or not reason.strip():
        errors["reason"] = ["a reason is required"]
    if errors:
        raise ActionError(errors)
    if action == "replay":
        _check_target(target)


def create_job(actor, action: str, *, ids=None, filters=None, target="original",
               rate_per_s=None, reason="", request_id="") -> Job:  # fmt: skip
    """Freeze the selection and write the job; the caller starts it (tasks.run_job)."""
    _validate(action, ids, filters, target, rate_per_s, reason)
    frozen_at = datetime.now(UTC)
    who = audit.actor_fields(actor)
    with transaction.atomic():
        job = Job.objects.create(
            action=action,
            target_json=json.dumps(target if action == "replay" else None),
            rate_per_s=rate_per_s,
            reason=reason.strip(),
            filter_json=json.dumps(filters, default=str) if filters is not None else "",
            created_by=who["actor_name"],
            created_by_id=who["actor_id"],
            created_at=frozen_at,
        )
        selection = (
            Message.objects.filter(pk__in=ids)
            if ids is not None
            else filter_messages(filters).filter(received_at__lte=frozen_at, status=Status.PARKED)
        )
        job.total = _add_items(job, selection.order_by("id").values_list("id", flat=True))
        job.save(update_fields=["total"])
        audit.record(actor, AuditAction.JOB_CREATE, job.reason, job_id=job.pk,
                     request_id=request_id, detail=_job_detail(job, ids))  # fmt: skip
    return job


def _add_items(job: Job, message_ids) -> int:
    total, chunk = 0, []
    for message_id in message_ids.iterator(chunk_size=5000):
        chunk.append(JobItem(job=job, message_id=message_id))
        if len(chunk) == 5000:
            total += len(JobItem.objects.bulk_create(chunk))
            chunk = []
    if chunk:
        total += len(JobItem.objects.bulk_create(chunk))
    return total


def _job_detail(job: Job, ids) -> dict:
    return {
        "action": job.action,
        "target": job.target,
        "total": job.total,
        "filter": json.loads(job.filter_json) if job.filter_json else None,
        "ids": len(ids) if ids is not None else None,
        "rate_per_s": job.rate_per_s,
    }


def cancel_job(job_id: int, actor, request_id: str = "") -> Job:
    with transaction.atomic():
        job = Job.objects.select_for_update().filter(pk=job_id).first()
        if job is None:
            raise NotFound(f"job {job_id} does not exist")
        if job.status in (JobStatus.DONE, JobStatus.CANCELLED, JobStatus.FAILED):
            raise Conflict(f"job {job_id} is {job.status}; it cannot be cancelled")
        job.cancel_requested = True
        if job.status == JobStatus.PENDING:
            job.status, job.finished_at = JobStatus.CANCELLED, datetime.now(UTC)
        job.save(update_fields=["cancel_requested", "status", "finished_at"])
        audit.record(actor, AuditAction.JOB_CANCEL, "", job_id=job.pk, request_id=request_id)
    return job


# --- running a job ------------------------------------------------------------------------


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
            publisher = (publisher_factory or _publisher)()
            try:
                return _run_replay(job, publisher)
            finally:
                publisher.close()
    except (ConnectionError, *amqp.AllErrors) as e:
        # The broker is gone: leave the job running; the heartbeat goes stale and a later
        # run resumes it (publishing items are published again, the window of duplicates).
        log.warning("job interrupted by the broker", extra={"job": job_id, "error": repr(e)})
        return "interrupted"


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


def _publisher():
    return amqp.ConfirmPublisher(
        settings.DLQ_BROKER_URL, "dlq-replay-job", window=settings.DLQ_REPLAY_WINDOW
    )


def _batch_size(job: Job) -> int:
    # A rate-limited job works in batches of about a second, so cancel takes effect soon.
    return max(1, min(BATCH, job.rate_per_s)) if job.rate_per_s else BATCH


def _next_items(job: Job, after: int = 0) -> list[JobItem]:
    items = job.items.filter(state=ItemState.PENDING, id__gt=after).order_by("id")
    return list(items[: _batch_size(job)])


def _cancel_requested(job: Job) -> bool:
    return Job.objects.filter(pk=job.pk, cancel_requested=True).exists()


def _finish(job: Job, status: str) -> str:
    Job.objects.filter(pk=job.pk).update(status=status, finished_at=datetime.now(UTC))
    log.info("job finished", extra={"job": job.pk, "status": status})
    return status


def _count(job: Job, outcomes: dict[str, int], done: int, failed: int) -> None:
    """Add a settled batch to the job's progress (in the settling transaction).

    `job.totals` holds the outcomes counted so far: read when this worker took the job, and
    only this worker settles it, so one UPDATE does (no read, no lock per batch)."""
    if not hasattr(job, "totals"):
        job.totals = Job.objects.get(pk=job.pk).outcomes
    for outcome, n in outcomes.items():
        job.totals[outcome] = job.totals.get(outcome, 0) + n
    Job.objects.filter(pk=job.pk).update(
        done=F("done") + done,
        failed=F("failed") + failed,
        outcomes_json=json.dumps(job.totals),
        heartbeat_at=datetime.now(UTC),
    )


def _tally(items: list[JobItem]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item.outcome] = counts.get(item.outcome, 0) + 1
    return counts


def _item_state(outcome: str) -> str:
    if outcome == "skipped":
        return ItemState.SKIPPED
    return ItemState.DONE if outcome in ("discarded", Outcome.CONFIRMED) else ItemState.FAILED


def _set_items(items: list[JobItem], outcome_of) -> None:
    by_outcome: dict[str, list[int]] = {}
    for item in items:
        item.outcome = outcome_of(item)
        by_outcome.setdefault(item.outcome, []).append(item.pk)
    for outcome, pks in by_outcome.items():
        JobItem.objects.filter(pk__in=pks).update(state=_item_state(outcome), outcome=outcome)


# --- discard ------------------------------------------------------------------------------


def _run_discard(job: Job) -> str:
    after = 0
    while True:
        if _cancel_requested(job):
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
        _set_items(items, lambda item: "discarded" if item.message_id in parked else "skipped")
        _count(job, _tally(items), done=len(parked), failed=len(items) - len(parked))
    _pace(job, len(items), started)


def _pace(job: Job, n: int, started: float) -> None:
    if job.rate_per_s:
        time.sleep(max(0.0, n / job.rate_per_s - (time.monotonic() - started)))


# --- replay -------------------------------------------------------------------------------


@dataclass
class Batch:
    """A claimed batch: what to publish, and what is already decided without publishing."""

    items: list  # ClaimedItem
    outgoing: list = field(default_factory=list)
    routes: dict = field(default_factory=dict)  # item pk -> replay.Route
    failures: dict = field(default_factory=dict)  # item pk -> (outcome, detail)
    claimed_at: datetime = field(default_factory=lambda: datetime.now(UTC))


def _run_replay(job: Job, publisher) -> str:
    """Claim, publish, settle, overlapped: while this thread publishes batch k, one thread
    claims batch k+1 and another settles batch k-1, each on its own database connection."""
    limits = (publisher.frame_max, replay.max_message_bytes(publisher.server_version))
    job.overrides = replay.load_overrides()  # read once per run, not once per message
    claimer = ThreadPoolExecutor(1, thread_name_prefix="dlq-job-claim")
    settler = ThreadPoolExecutor(1, thread_name_prefix="dlq-job-settle")
    try:
        batch = claimer.submit(_claim_next, job, 0, limits).result()
        settling = None
        while batch is not None:
            ahead = claimer.submit(_claim_next, job, batch.items[-1].pk, limits)
            results = _publish(job, batch, publisher)
            if settling is not None:
                settling.result()
            if publisher.broken:
                ahead.result()  # committed as `publishing`: published when the job resumes
                settler.submit(_settle_batch, job, batch, results, True).result()
                raise ConnectionError("the broker connection was lost during the batch")
            settling = settler.submit(_settle_batch, job, batch, results)
            batch = ahead.result()
        if settling is not None:
            settling.result()
    finally:
        for pool in (claimer, settler):
            pool.submit(_close_connection)  # each thread's own database connection
            pool.shutdown(wait=True)
    status = JobStatus.CANCELLED if _cancel_requested(job) else JobStatus.DONE
    return _finish(job, status)


def _close_connection() -> None:
    connection.close()  # looked up in the calling thread: that thread's own connection


def _publish(job: Job, batch: Batch, publisher) -> dict:
    if not batch.outgoing:
        return {}
    timeout = max(60.0, 2 * len(batch.outgoing) / job.rate_per_s) if job.rate_per_s else 60.0
    return publisher.publish(batch.outgoing, timeout=timeout, rate_per_s=job.rate_per_s)


def _claim_next(job: Job, after: int, limits) -> Batch | None:
    """The next batch claimed and committed, or None when the job is finished or cancelled.

    Items a dead worker left `publishing` come first (they precede the pending ones: items
    are claimed in id order); a cancelled job still settles those, and claims nothing new."""
    cancelled = _cancel_requested(job)
    with transaction.atomic():
        items = []
        if job.__dict__.get("resuming", True):
            items = _items_to_claim(job, after, ItemState.PUBLISHING)
            job.resuming = bool(items)
        if not items and not cancelled:
            items = _items_to_claim(job, after, ItemState.PENDING)
        return _claim_batch(job, items, *limits) if items else None


# What a claim reads: enough to decide, resolve and build, nothing more (search_text...).
MESSAGE_FIELDS = ("id", "status", "queue", "body", "properties_json", "headers_json",
                  "original_exchange", "original_routing_keys_json", "failed_queue",
                  "replay_count")  # fmt: skip


class ClaimedMessage:
    """The columns of a message that a claim reads, shaped like a Message for replay.resolve
    and replay.build (no model instances: a claim is on the publishing thread's GIL)."""

    __slots__ = MESSAGE_FIELDS

    def __init__(self, values):
        for name, value in zip(MESSAGE_FIELDS, values, strict=True):
            setattr(self, name, value)

    pk = property(lambda self: self.id)
    properties = property(lambda self: json.loads(self.properties_json))
    headers = property(lambda self: json.loads(self.headers_json))
    original_routing_keys = property(lambda self: json.loads(self.original_routing_keys_json))


class ClaimedItem:
    __slots__ = ("pk", "state", "replay_id", "message_id", "message", "outcome")

    def __init__(self, pk, state, replay_id, message_id, message):
        self.pk, self.state, self.replay_id = pk, state, replay_id
        self.message_id, self.message, self.outcome = message_id, message, ""


def _items_to_claim(job: Job, after: int, state: str) -> list[ClaimedItem]:
    """The next items in `state` with their messages, locked (one query, in id order)."""
    q = connection.ops.quote_name
    columns = ", ".join(f"m.{q(name)}" for name in MESSAGE_FIELDS)
    lock = " FOR UPDATE OF m" if connection.features.has_select_for_update_of else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT i.id, i.state, i.replay_id, i.message_id, {columns}"
            f" FROM {q(JobItem._meta.db_table)} i JOIN {q(Message._meta.db_table)} m"
            " ON m.id = i.message_id WHERE i.job_id = %s AND i.state = %s AND i.id > %s"
            f" ORDER BY i.id LIMIT %s{lock}",
            [job.pk, state, after, _batch_size(job)],
        )
        rows = cursor.fetchall()
    return [ClaimedItem(*row[:4], ClaimedMessage(row[4:])) for row in rows]


def _claim_batch(job: Job, items: list[ClaimedItem], frame_max: int, max_body: int) -> Batch:
    """Mark the batch's messages `replaying` and build what to publish (in the transaction
    that locked them, see _claim_next)."""
    batch = Batch(items)
    target, overrides = job.target, job.__dict__.get("overrides")
    claimed = []
    for item in items:
        message = item.message
        status = message.status
        resuming = item.state == ItemState.PUBLISHING and status == Status.REPLAYING
        if not (status == Status.PARKED or resuming):
            batch.failures[item.pk] = ("skipped", "")
            continue
        replay_id = item.replay_id if resuming else uuid.uuid4().hex
        try:
            route = replay.resolve(message, target, overrides)
            out = replay.build(message, route, replay_id, frame_max, max_body)
        except replay.ReplayError as e:
            batch.failures[item.pk] = (Outcome.ERROR, str(e))
            continue
        batch.outgoing.append(out)
        batch.routes[item.pk] = route
        item.replay_id, item.state = replay_id, ItemState.PUBLISHING
        if not resuming:
            claimed.append(message.pk)
    _mark_publishing(claimed, [i for i in items if i.pk in batch.routes])
    return batch


def _mark_publishing(message_ids: list[int], items: list[ClaimedItem]) -> None:
    """Messages `replaying`, items `publishing` with their replay ids. One statement on
    PostgreSQL (bulk_update's CASE WHEN over 1000 rows took seconds per batch)."""
    if not items:
        return
    q = connection.ops.quote_name
    message, item = q(Message._meta.db_table), q(JobItem._meta.db_table)
    publishing = ItemState.PUBLISHING.value
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"WITH m AS (UPDATE {message} SET status = %s WHERE id = ANY(%s::bigint[]))"
                f" UPDATE {item} AS i SET state = %s, replay_id = v.rid"
                " FROM unnest(%s::bigint[], %s::text[]) AS v(id, rid) WHERE i.id = v.id",
                [Status.REPLAYING.value, message_ids, publishing,
                 [i.pk for i in items], [i.replay_id for i in items]],
            )  # fmt: skip
            return
        Message.objects.filter(pk__in=message_ids).update(status=Status.REPLAYING)
        cursor.executemany(
            f"UPDATE {item} SET state = %s, replay_id = %s WHERE id = %s",
            [(publishing, i.replay_id, i.pk) for i in items],
        )


def _settle_batch(job: Job, batch: Batch, results: dict, partial: bool = False) -> None:
    """Record the broker's answers: `replayed` only for a confirm with no return.

    `partial` (the connection was lost): only what the broker answered is settled; the rest
    stays `publishing`, to be published again when the job resumes."""
    now = datetime.now(UTC)
    answered = {}
    for item in batch.items:
        result = batch.failures.get(item.pk) or results.get(item.replay_id)
        if result is not None and not (partial and result[0] == Outcome.ERROR):
            answered[item.pk] = result
    items = [i for i in batch.items if i.pk in answered]
    for item in items:
        item.outcome = answered[item.pk][0]
    published = [i for i in items if i.pk in batch.routes]
    confirmed = [i for i in published if i.outcome == Outcome.CONFIRMED]
    unconfirmed = [i for i in published if i.outcome != Outcome.CONFIRMED]
    with transaction.atomic():
        if connection.vendor == "postgresql":
            _settle_rows_pg(job, batch, items, answered, confirmed, unconfirmed, now)
        else:
            Message.objects.filter(
                pk__in=[i.message_id for i in confirmed], status=Status.REPLAYING
            ).update(status=Status.REPLAYED, replay_count=F("replay_count") + 1)
            Message.objects.filter(
                pk__in=[i.message_id for i in unconfirmed], status=Status.REPLAYING
            ).update(status=Status.PARKED)
            _insert_replays(job, batch, published, answered, now)
            _set_items(items, lambda i: i.outcome)
        _count(job, _tally(items), done=len(confirmed), failed=len(items) - len(confirmed))


def _settle_rows_pg(job, batch, items, answered, confirmed, unconfirmed, now) -> None:
    """The settle's writes in one statement (data-modifying CTEs; one round trip): the
    messages' statuses, the items' states and outcomes, the Replay rows."""
    q = connection.ops.quote_name
    message, item = q(Message._meta.db_table), q(JobItem._meta.db_table)
    published = [i for i in items if i.pk in batch.routes]
    replays, params = _replay_rows(job, batch, published, answered, now)
    sql = (
        f"WITH ok AS (UPDATE {message} SET status = %s, replay_count = replay_count + 1"
        " WHERE id = ANY(%s::bigint[]) AND status = %s),"
        f" back AS (UPDATE {message} SET status = %s WHERE id = ANY(%s::bigint[])"
        " AND status = %s),"
        f" items AS (UPDATE {item} AS i SET state = v.s, outcome = v.o"
        " FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS v(id, s, o) WHERE i.id = v.id)"
        f" {replays}"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            [
                Status.REPLAYED.value, [i.message_id for i in confirmed], Status.REPLAYING.value,
                Status.PARKED.value, [i.message_id for i in unconfirmed], Status.REPLAYING.value,
                [i.pk for i in items], [_item_state(i.outcome) for i in items],
                [i.outcome for i in items], *params,
            ],
        )  # fmt: skip


REPLAY_COLUMNS = ("message_id", "replay_id", "exchange", "routing_key", "outcome", "detail",
                  "target", "job_id", "actor_name", "started_at", "settled_at")  # fmt: skip


def _replay_columns(batch: Batch, items: list, answered: dict) -> tuple[list, str]:
    """Per-item values of the Replay rows, column by column, and the job's one target."""
    columns = [
        [i.message_id for i in items],
        [i.replay_id for i in items],
        [batch.routes[i.pk].exchange for i in items],
        [batch.routes[i.pk].routing_key for i in items],
        [answered[i.pk][0] for i in items],
        [answered[i.pk][1] for i in items],
    ]
    return columns, batch.routes[items[0].pk].target


def _replay_rows(job: Job, batch: Batch, items: list, answered: dict, now) -> tuple[str, list]:
    """An INSERT of the Replay rows of the published items (PostgreSQL), and its parameters;
    with no items, a statement that does nothing."""
    if not items:
        return "SELECT 1", []
    table = connection.ops.quote_name(Replay._meta.db_table)
    names = ", ".join(connection.ops.quote_name(c) for c in REPLAY_COLUMNS)
    columns, target = _replay_columns(batch, items, answered)
    sql = (
        f"INSERT INTO {table} ({names}) SELECT m, r, e, k, o, d, %s, %s, %s, %s, %s FROM"
        " unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[])"
        " AS v(m, r, e, k, o, d)"
    )
    return sql, [target, job.pk, job.created_by, batch.claimed_at, now, *columns]


def _insert_replays(job: Job, batch: Batch, items: list, answered: dict, now) -> None:
    """The Replay rows of the published items, with their outcomes (other databases)."""
    if not items:
        return
    columns, target = _replay_columns(batch, items, answered)
    Replay.objects.bulk_create(
        Replay(**dict(zip(REPLAY_COLUMNS, (*row, target, job.pk, job.created_by,
                                           batch.claimed_at, now), strict=True)))
        for row in zip(*columns, strict=True)
    )  # fmt: skip
