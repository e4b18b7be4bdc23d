"""One batch of a replay job: claimed in one transaction, settled in another.

Claiming makes each parked message `replaying` and its item `publishing` with a replay id;
settling makes a message confirmed with no return `replayed`, and puts anything else back to
`parked`, writing the Replay rows, items, counters and outcomes. On PostgreSQL each is one
set-based statement over arrays. The run around them is dlq/jobs/running.py.
"""

import json
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.db import connection, transaction
from django.db.models import F

from dlq.actions import replay
from dlq.jobs import returns
from dlq.jobs.publishers import VhostRefused
from dlq.models import Message, Status
from dlq.models.actions import ItemState, Job, JobItem, Outcome, Replay

BATCH = 1000  # messages claimed, published and settled together


@dataclass
class Batch:
    """A claimed batch: what to publish, and what is already decided without publishing."""

    items: list  # ClaimedItem
    outgoing: list = field(default_factory=list)
    vhosts: dict = field(default_factory=dict)  # replay id -> the vhost to publish it in
    routes: dict = field(default_factory=dict)  # item pk -> replay.Route
    failures: dict = field(default_factory=dict)  # item pk -> (outcome, detail)
    claimed_at: datetime = field(default_factory=lambda: datetime.now(UTC))


def claim_next(job: Job, after: int, limits) -> Batch | None:
    """The next batch claimed and committed, or None when the job is finished or cancelled.
    `limits(vhost)` is (frame_max, max message bytes) of that vhost's publisher
    (dlq/jobs/publishers.py), or raises VhostRefused.

    Items a dead worker left `publishing` come first (they precede the pending ones: items
    are claimed in id order); a cancelled job still settles those, and claims nothing new.
    Once they are done, pending items are looked for from the job's first again: the dead
    worker's batches also held items that were never `publishing` (skipped, or not
    buildable), decided only by the settle it did not reach."""
    stopping = cancel_requested(job) or bool(returns.exceeded_lately(job))
    with transaction.atomic():
        items = []
        if job.__dict__.get("resuming", True):
            items = _items_to_claim(job, after, ItemState.PUBLISHING, batch_size(job))
            job.resuming = bool(items)
            if not items:
                after = 0
        if not items and not stopping and (room := _room(job)):
            items = _items_to_claim(job, after, ItemState.PENDING, room)
            job.claimed = job.__dict__.get("claimed", 0) + len(items)
        return _claim_batch(job, items, limits) if items else None


def _room(job: Job) -> int:
    """How many pending items the next claim may take: a batch, or what is left of the
    step (`step_end` items of the job claimed in all: dlq/jobs/steps.py)."""
    step_end = job.__dict__.get("step_end")
    if step_end is None:
        return batch_size(job)
    return max(0, min(batch_size(job), step_end - job.__dict__.get("claimed", 0)))


# What a claim reads: enough to decide, resolve and build, nothing more (search_text...).
MESSAGE_FIELDS = ("id", "status", "vhost", "queue", "body", "properties_json", "headers_json",
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


def _items_to_claim(job: Job, after: int, state: str, limit: int) -> list[ClaimedItem]:
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
            [job.pk, state, after, limit],
        )
        rows = cursor.fetchall()
    return [ClaimedItem(*row[:4], ClaimedMessage(row[4:])) for row in rows]


def _claim_batch(job: Job, items: list[ClaimedItem], limits) -> Batch:
    """Mark the batch's messages `replaying` and build what to publish (in the transaction
    that locked them, see claim_next), each for its own vhost's publisher."""
    batch = Batch(items)
    target, overrides = job.target, job.__dict__.get("overrides")
    claimed, released, new_ids = [], [], False
    for item in items:
        message = item.message
        status = message.status
        resuming = item.state == ItemState.PUBLISHING and status == Status.REPLAYING
        if not (status == Status.PARKED or resuming):
            batch.failures[item.pk] = ("skipped", "")
            continue
        # Drawn at the freeze (control.NEW_REPLAY_ID); here for jobs frozen without one.
        replay_id = item.replay_id or uuid.uuid4().hex
        try:
            route = replay.resolve(message, target, overrides)
            out = replay.build(message, route, replay_id, *limits(message.vhost))
        except (replay.ReplayError, VhostRefused) as e:
            batch.failures[item.pk] = (Outcome.ERROR, str(e))
            if resuming:  # left `replaying` by a dead worker: parked again, not stuck
                released.append(message.pk)
            continue
        batch.outgoing.append(out)
        batch.vhosts[replay_id] = message.vhost
        batch.routes[item.pk] = route
        drawn = replay_id != item.replay_id
        item.replay_id, item.state = replay_id, ItemState.PUBLISHING
        if not resuming:
            claimed.append(message.pk)
            new_ids = new_ids or drawn
    _mark_publishing(claimed, [i for i in items if i.pk in batch.routes], new_ids, job.step)
    Message.objects.filter(pk__in=released, status=Status.REPLAYING).update(status=Status.PARKED)
    return batch


def _mark_publishing(
    message_ids: list[int], items: list[ClaimedItem], new_ids: bool, step: int
) -> None:
    """Messages `replaying`, items `publishing` in the job's `step` (with the replay ids
    drawn by the claim, when `new_ids`). One statement on PostgreSQL (bulk_update's CASE
    WHEN over 1000 rows took seconds per batch)."""
    if not items:
        return
    q = connection.ops.quote_name
    message, item = q(Message._meta.db_table), q(JobItem._meta.db_table)
    publishing, pks = ItemState.PUBLISHING.value, [i.pk for i in items]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            items_sql, params = (
                f"UPDATE {item} SET state = %s, step = %s WHERE id = ANY(%s::bigint[])",
                [publishing, step, array(pks)],
            )
            if new_ids:
                items_sql = (
                    f"UPDATE {item} AS i SET state = %s, step = %s, replay_id = v.rid FROM"
                    " unnest(%s::bigint[], %s::text[]) AS v(id, rid) WHERE i.id = v.id"
                )
                params.append(array([i.replay_id for i in items]))
            cursor.execute(
                f"WITH m AS (UPDATE {message} SET status = %s WHERE id = ANY(%s::bigint[]))"
                f" {items_sql}",
                [Status.REPLAYING.value, array(message_ids), *params],
            )
            return
        Message.objects.filter(pk__in=message_ids).update(status=Status.REPLAYING)
        cursor.executemany(
            f"UPDATE {item} SET state = %s, step = %s, replay_id = %s WHERE id = %s",
            [(publishing, step, i.replay_id, i.pk) for i in items],
        )


def settle_batch(job: Job, batch: Batch, results: dict, partial: bool = False) -> None:
    """Record the broker's answers: `replayed` only for a confirm with no return.

    `partial` (the connection was lost): only what the broker answered is settled; the rest
    stays `publishing`, to be published again when the job resumes."""
    now = datetime.now(UTC)
    answered = {}
    for item in batch.items:
        decided = batch.failures.get(item.pk)  # by the claim, whatever the broker does
        result = decided or results.get(item.replay_id)
        if decided or (result is not None and not (partial and result[0] == Outcome.ERROR)):
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
            set_items(items, lambda i: i.outcome)
            for item in items:
                if answered[item.pk][1]:
                    JobItem.objects.filter(pk=item.pk).update(detail=answered[item.pk][1])
        count_done(job, tally(items), done=len(confirmed), failed=len(items) - len(confirmed))


def _settle_rows_pg(job, batch, items, answered, confirmed, unconfirmed, now) -> None:
    """The settle's writes in one statement (data-modifying CTEs; one round trip): the
    messages' statuses, the items' states and outcomes, the Replay rows."""
    q = connection.ops.quote_name
    message = q(Message._meta.db_table)
    published = [i for i in items if i.pk in batch.routes]
    replays, params = _replay_rows(job, batch, published, answered, now)
    items_sql, items_params = _items_settled_sql(items, answered)
    sql = (
        f"WITH ok AS (UPDATE {message} SET status = %s, replay_count = replay_count + 1"
        " WHERE id = ANY(%s::bigint[]) AND status = %s),"
        f" back AS (UPDATE {message} SET status = %s WHERE id = ANY(%s::bigint[])"
        f" AND status = %s), {items_sql} {replays}"
    )
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            [
                Status.REPLAYED.value, array(i.message_id for i in confirmed),
                Status.REPLAYING.value, Status.PARKED.value,
                array(i.message_id for i in unconfirmed), Status.REPLAYING.value,
                *items_params, *params,
            ],
        )  # fmt: skip


GROUPED_UPDATES = 4  # more kinds of outcome in a batch than this: one UPDATE over arrays


def _items_settled_sql(items, answered) -> tuple[str, list]:
    """CTEs setting the items' states, outcomes and details. A batch mostly has one or two
    kinds (all confirmed): one UPDATE over an id array per kind is cheaper, on both sides of
    the wire, than one over four arrays with a value per item."""
    table = connection.ops.quote_name(JobItem._meta.db_table)
    kinds: dict[tuple, list[int]] = {}
    for i in items:
        kinds.setdefault((item_state(i.outcome), i.outcome, answered[i.pk][1]), []).append(i.pk)
    if len(kinds) > GROUPED_UPDATES:
        return (
            f"items AS (UPDATE {table} AS i SET state = v.s, outcome = v.o, detail = v.d FROM"
            " unnest(%s::bigint[], %s::text[], %s::text[], %s::text[]) AS v(id, s, o, d)"
            " WHERE i.id = v.id)",
            [array(i.pk for i in items), [item_state(i.outcome) for i in items],
             [i.outcome for i in items], [answered[i.pk][1] for i in items]],
        )  # fmt: skip
    ctes, params = [], []
    for n, ((state, outcome, detail), pks) in enumerate(kinds.items()):
        ctes.append(
            f"items{n} AS (UPDATE {table} SET state = %s, outcome = %s, detail = %s"
            " WHERE id = ANY(%s::bigint[]))"
        )
        params += [state, outcome, detail, array(pks)]
    return ", ".join(ctes) or "items AS (SELECT 1)", params


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
    columns[:2] = array(columns[0]), array(columns[1])  # ids and hex replay ids
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


def array(values) -> str:
    """A PostgreSQL array literal of whole numbers or hex replay ids: neither ever needs
    quoting, and Django's client-side binding quotes a list element by element (most of a
    settle's time in Python). Anything else is refused: in a literal it could add elements."""
    literal = ",".join(map(str, values))
    if not ARRAY_SAFE.fullmatch(literal):
        raise ValueError("array() takes whole numbers and hex ids only")
    return "{" + literal + "}"


ARRAY_SAFE = re.compile(r"(?:-?[0-9a-f]+(?:,-?[0-9a-f]+)*)?")


def batch_size(job: Job) -> int:
    # A rate-limited job works in batches of about a second, so cancel takes effect soon.
    return max(1, min(BATCH, job.rate_per_s)) if job.rate_per_s else BATCH


def cancel_requested(job: Job) -> bool:
    return Job.objects.filter(pk=job.pk, cancel_requested=True).exists()


def count_done(job: Job, outcomes: dict[str, int], done: int, failed: int) -> None:
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


def tally(items: list[JobItem]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item.outcome] = counts.get(item.outcome, 0) + 1
    return counts


def item_state(outcome: str) -> str:
    if outcome == "skipped":
        return ItemState.SKIPPED
    return ItemState.DONE if outcome in ("discarded", Outcome.CONFIRMED) else ItemState.FAILED


def set_items(items: list[JobItem], outcome_of) -> None:
    by_outcome: dict[str, list[int]] = {}
    for item in items:
        item.outcome = outcome_of(item)
        by_outcome.setdefault(item.outcome, []).append(item.pk)
    for outcome, pks in by_outcome.items():
        JobItem.objects.filter(pk__in=pks).update(state=item_state(outcome), outcome=outcome)
