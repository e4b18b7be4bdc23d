"""Writing drained batches: one transaction per batch, idempotent across redeliveries.

The idempotency key. AMQP 0-9-1 gives a message no identity of its own, and two distinct
messages can be byte-for-byte identical, so content alone cannot tell a redelivery from a
twin. The drainer therefore records *which batches it has committed but not yet acked*:

1. A batch is stored in one transaction together with a `PendingBatch` row (its id is
   made by the drainer, so a commit whose outcome was lost can be checked before a retry).
2. After the commit the drainer acks the batch; only then is the `PendingBatch` forgotten,
   within microseconds of the ack (`PreparedForget`, dlq/drain/pending.py). If the broker
   closes the connection and drops the ack unprocessed, the drainer learns it from its ack
   ledger (dlq/drain/ledger.py: the ack and a note naming its batch are committed in one
   AMQP transaction) and makes the batch pending again (`pending.restore_pending`).
3. A delivery with `redelivered=False` was never delivered before, so it is new: insert.
   A delivery with `redelivered=True` is matched, one to one, against the rows of batches
   still pending by its fingerprint (SHA-256 of vhost, queue, properties, headers with
   x-death, body). A match is the same message after a crash between commit and ack:
   no new row. No match: it is new (it was delivered before but never stored).

So a crash before the commit stores nothing (redelivered, inserted), a crash between commit
and ack stores once (the pending batch matches), and twins stay two rows (the first is not
pending once acked). The residue, documented in the README: a redelivered *twin* (an
identical message that some consumer received and dropped unacked) that arrives while an
identical message sits in another connection's pending batch is taken for a redelivery.
That needs identical bytes, x-death times included, and a crash, within the millisecond or
so a batch stays pending, or a crash in the microseconds between an ack and the COMMIT of
its forgetting (which leaves the pending row behind). And when the broker drops acks with
a connection, another drainer may store the redeliveries before this one has made their
batch pending again: those are stored twice.
"""

import contextlib
import functools
import logging
import operator
from datetime import UTC, datetime

from django.db import DatabaseError, OperationalError, connection, transaction

from dlq.models import DrainedQueue, Message, PendingBatch

log = logging.getLogger("dlq.store")

COLUMNS = [
    "queue", "vhost", "status", "received_at", "body", "size", "properties_json",
    "headers_json", "message_id", "correlation_id", "content_type", "content_encoding",
    "exchange", "routing_key", "original_exchange", "original_routing_keys_json",
    "original_routing_key", "failed_queue", "death_reason", "death_count", "delivery_count",
    "first_death_at", "exception_type", "exception_message", "exception_stacktrace",
    "message_type", "group", "replay_count", "previous_id", "lineage_id", "fingerprint",
    "drain_batch", "search_text", "drain_note", "trace_id",
]  # fmt: skip
_TABLE = Message._meta.db_table


def _insert_sql() -> str:
    cols = ", ".join(connection.ops.quote_name(c) for c in COLUMNS)
    marks = ", ".join(["%s"] * len(COLUMNS))
    return f"INSERT INTO {_TABLE} ({cols}) VALUES ({marks})"


_VALUES = operator.itemgetter(*COLUMNS)


def _adapter():
    """A row dict -> its COLUMNS values, datetimes adapted for this database."""
    adapt = connection.ops.adapt_datetimefield_value  # once: the connection proxy is slow

    def values(row: dict) -> tuple:
        return tuple([adapt(v) if isinstance(v, datetime) else v for v in _VALUES(row)])

    return values


def _adapt(row: dict) -> tuple:
    return _adapter()(row)


def _match_redeliveries(cursor, batch_id: str, drainer: str, rows: list[dict]) -> set[int]:
    """Indexes of redelivered rows that are already stored by a pending batch.

    Batches of this drainer's own connection are left out: the broker cannot redeliver a
    message to the channel that still holds it unacked, so only a twin could match there.
    """
    wanted = [i for i, row in enumerate(rows) if row.get("_redelivered")]
    if not wanted:
        return set()
    prints = sorted({fp for i in wanted for fp in _fingerprints(rows[i])})
    marks = ", ".join(["%s"] * len(prints))
    lock = " FOR UPDATE OF m SKIP LOCKED" if connection.vendor == "postgresql" else ""
    cursor.execute(
        f"SELECT m.id, m.fingerprint, p.id FROM {_TABLE} m JOIN {PendingBatch._meta.db_table} p"
        f" ON m.drain_batch = p.id WHERE m.fingerprint IN ({marks}) AND p.drainer <> %s"
        f" ORDER BY m.id{lock}",
        [*prints, drainer],
    )
    stored: dict[str, list[tuple[int, str]]] = {}
    for pk, fp, pending in cursor.fetchall():
        stored.setdefault(fp, []).append((pk, pending))
    matched, taken, sources = set(), [], set()
    for i in wanted:
        found = next((f for fp in _fingerprints(rows[i]) if (f := stored.get(fp))), None)
        if found:
            pk, pending = found.pop(0)
            taken.append(pk)
            sources.add(pending)
            matched.add(i)
    if taken:
        # Rare (a crash or a lost connection) and decisive: say which batches vouched.
        log.info(
            "redeliveries recognised as stored",
            extra={"batch": batch_id, "messages": len(taken), "pending": ",".join(sorted(sources))},
        )
        # The stored rows now belong to this batch: if its ack is lost too, they match again.
        marks = ", ".join(["%s"] * len(taken))
        cursor.execute(
            f"UPDATE {_TABLE} SET drain_batch = %s WHERE id IN ({marks})", [batch_id, *taken]
        )
    return matched


def _fingerprints(row: dict) -> list[str]:
    """The row's fingerprint, and the one 0.1.0 made of the same message (ingest.py)."""
    legacy = row.get("_legacy_fingerprint")
    return [row["fingerprint"], legacy] if legacy else [row["fingerprint"]]


def _link_lineage(cursor, rows: list[dict]) -> None:
    """A message that comes back carrying dlq-origin-id joins its earlier life."""
    origins = sorted({row["previous_id"] for row in rows if row["previous_id"]})
    if not origins:
        return
    marks = ", ".join(["%s"] * len(origins))
    cursor.execute(f"SELECT id, lineage_id FROM {_TABLE} WHERE id IN ({marks})", origins)
    roots = {pk: lineage or pk for pk, lineage in cursor.fetchall()}
    for row in rows:
        previous = row["previous_id"]
        row["previous_id"] = previous if previous in roots else None
        row["lineage_id"] = roots.get(previous)


# Column types -> the types psycopg sends them as in a binary COPY.
_BINARY_TYPES = {
    "text": "text",
    "varchar": "text",  # the same wire format; the column still checks its length
    "timestamp with time zone": "timestamptz",
    "bytea": "bytea",
    "integer": "int4",
    "bigint": "int8",
}


def _binary_types() -> list[str] | None:
    """The COPY types of COLUMNS, or None if one has no binary form here (text COPY)."""
    types = []
    for name in COLUMNS:
        db_type = Message._meta.get_field(name).db_type(connection) or ""
        types.append(_BINARY_TYPES.get(db_type.split("(")[0]))
    return None if None in types else types


_lz4: bool | None = None  # does the server compress with lz4? (asked once)


def _lz4_setting(cursor) -> str:
    """Large values (the body, the search text, the headers) are compressed by the server
    as they are stored; lz4 takes it a fraction of the time of pglz, the default, and
    reads back the same values. The statement sets it for the transaction, where the
    server has lz4; else it is empty."""
    global _lz4
    if _lz4 is None:
        cursor.execute(
            "SELECT count(*) FROM pg_settings"
            " WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)"
        )
        _lz4 = bool(cursor.fetchone()[0])
    return "SET LOCAL default_toast_compression = lz4" if _lz4 else ""


@functools.cache
def _copy_statement() -> tuple[str, list[str] | None]:
    """The COPY statement and its binary types (the same for the life of the process)."""
    cols = ", ".join(connection.ops.quote_name(c) for c in COLUMNS)
    types = _binary_types()
    return f"COPY {_TABLE} ({cols}) FROM STDIN" + (" (FORMAT BINARY)" if types else ""), types


def _copy(cursor, rows: list[dict]) -> None:
    """COPY the rows in binary (PostgreSQL with psycopg 3).

    Django binds parameters client-side and disables prepared statements, so executemany
    makes the server parse one INSERT, literal body included, per row: about 200 us a row
    here, against about 60 for COPY (bench/drain.py). The stored values are the same.
    COPY is binary: the drainer's thread spends less than half the time on a row as in
    text COPY (no escaping of the body and the long texts), and the server parses less.
    """
    sql, types = _copy_statement()
    # psycopg takes the datetimes as they are (PostgreSQL's adapt_datetimefield_value is
    # the identity): no adapting row by row.
    with connection.wrap_database_errors, cursor.cursor.copy(sql) as copy:
        if types:
            copy.set_types(types)
        for row in rows:
            copy.write_row(_VALUES(row))


def _can_copy(cursor) -> bool:
    return connection.vendor == "postgresql" and hasattr(getattr(cursor, "cursor", None), "copy")


def _insert_many(cursor, rows: list[dict]) -> None:
    """All rows at once: COPY on PostgreSQL with psycopg 3, else executemany."""
    if _can_copy(cursor):
        if setting := _lz4_setting(cursor):
            cursor.execute(setting)
        _copy(cursor, rows)
    else:
        cursor.executemany(_insert_sql(), list(map(_adapter(), rows)))


def _insert(cursor, rows: list[dict], row_by_row: bool = False) -> None:
    sql = _insert_sql()
    if not row_by_row:
        try:
            with transaction.atomic():
                _insert_many(cursor, rows)
            return
        except DatabaseError as e:
            if _is_outage(e):
                raise
            log.warning("batch insert refused, storing row by row", extra={"error": str(e)})
    # One row the database refuses must not hold the queue hostage: store the others,
    # and that one with its bytes intact but without the fields derived from it.
    for row in rows:
        try:
            with transaction.atomic():
                cursor.execute(sql, _adapt(row))
        except DatabaseError as row_error:
            if _is_outage(row_error):
                raise
            with transaction.atomic():
                cursor.execute(sql, _adapt(_minimal(row, row_error)))


def _minimal(row: dict, error: Exception) -> dict:
    safe = dict(row)
    for column in ("message_id", "correlation_id", "content_type", "content_encoding",
                   "exception_type", "exception_message", "exception_stacktrace",
                   "message_type", "search_text", "original_routing_key"):  # fmt: skip
        safe[column] = ""
    safe.update(
        previous_id=None,
        lineage_id=None,
        drain_note=f"stored without derived fields: {error}"[:1000],
    )
    return safe


def _is_outage(error: Exception) -> bool:
    from django.db import InterfaceError

    return isinstance(error, OperationalError | InterfaceError)


def store_batch(batch_id: str, drainer: str, rows: list[dict], forget: list[str] = ()) -> int:
    """Store a batch atomically; returns the number of new rows (0 if it was stored before)."""
    row_by_row = False
    with connection.cursor() as cursor:
        if _can_copy(cursor) and not connection.in_atomic_block:
            try:
                return _store_in_round_trips(cursor, batch_id, drainer, rows, forget)
            except _Refused as e:  # rolled back: stored below, row by row
                log.warning("batch insert refused, storing row by row", extra={"error": str(e)})
                row_by_row = True
    now = datetime.now(UTC)
    with transaction.atomic(), connection.cursor() as cursor:
        if forget:
            PendingBatch.objects.filter(id__in=list(forget)).delete()
        if PendingBatch.objects.filter(id=batch_id).exists():
            return 0  # an earlier attempt committed and only its answer was lost
        new = _new_rows(cursor, batch_id, drainer, rows)
        PendingBatch.objects.create(id=batch_id, drainer=drainer, created_at=now)
        if new:
            _insert(cursor, new, row_by_row)
        _touch_queues(new, now)
    return len(new)


class _Refused(Exception):
    """The database refused the batch's rows (not an outage); nothing was stored."""


def _new_rows(cursor, batch_id: str, drainer: str, rows: list[dict]) -> list[dict]:
    """The rows not stored yet, marked with their batch and linked to their earlier life."""
    matched = _match_redeliveries(cursor, batch_id, drainer, rows)
    new = [row for i, row in enumerate(rows) if i not in matched]
    for row in new:
        row["drain_batch"] = batch_id
    _link_lineage(cursor, new)
    return new


def _store_in_round_trips(cursor, batch_id, drainer, rows, forget) -> int:
    """store_batch on PostgreSQL in four round trips instead of a dozen.

    The drainer's writer thread must win the GIL back from the busy main thread after each
    answer from the database (up to a switch interval each time), so statements are sent
    together: BEGIN, the batch's PendingBatch row (ON CONFLICT: stored before) and the
    forgetting of acked batches; then the COPY; then the queues' arrival times and COMMIT.
    The queue rows are locked only for the COMMIT, as two drainers share them.
    """
    now = datetime.now(UTC)
    pending = PendingBatch._meta.db_table
    first, params = ["BEGIN", _lz4_setting(cursor)], []
    if forget:
        first.append(f"DELETE FROM {pending} WHERE id IN ({', '.join(['%s'] * len(forget))})")
        params.extend(forget)
    first.append(
        f"INSERT INTO {pending} (id, drainer, created_at) VALUES (%s, %s, %s)"
        " ON CONFLICT (id) DO NOTHING RETURNING id"
    )
    params.extend([batch_id, drainer, now])
    try:
        cursor.execute("; ".join(filter(None, first)), params)
        while cursor.nextset():  # the INSERT's answer is the last one
            pass
        if not cursor.fetchall():
            cursor.execute("ROLLBACK")
            return 0  # an earlier attempt committed and only its answer was lost
        new = _new_rows(cursor, batch_id, drainer, rows)
        if new:
            try:
                _copy(cursor, new)
            except DatabaseError as e:
                if _is_outage(e):
                    raise
                raise _Refused(str(e)) from e
        touch, params = _touch_statement(new, now)
        cursor.execute(f"{touch}; COMMIT" if touch else "COMMIT", params)
    except BaseException:
        with contextlib.suppress(Exception):  # a broken connection: the writer reconnects
            cursor.execute("ROLLBACK")
        raise
    return len(new)


def _touch_statement(rows: list[dict], now: datetime) -> tuple[str, list]:
    """An upsert of the arrival time of the rows' queues (sorted: no deadlock between two
    drainers), or "" when there are no rows."""
    queues = sorted({(row["vhost"], row["queue"]) for row in rows})
    if not queues:
        return "", []
    table, params = DrainedQueue._meta.db_table, []
    for vhost, name in queues:
        params.extend([vhost, name, now, now, now])
    values = ", ".join(["(%s, %s, '', %s, %s, %s)"] * len(queues))
    sql = (
        f"INSERT INTO {table} (vhost, name, queue_type, first_seen_at, last_seen_at,"
        f" last_arrival_at) VALUES {values} ON CONFLICT (vhost, name) DO UPDATE"
        " SET last_seen_at = EXCLUDED.last_seen_at, last_arrival_at = EXCLUDED.last_arrival_at"
    )
    return sql, params


def _touch_queues(rows: list[dict], now: datetime) -> None:
    for vhost, name in sorted({(row["vhost"], row["queue"]) for row in rows}):
        updated = DrainedQueue.objects.filter(vhost=vhost, name=name).update(
            last_arrival_at=now, last_seen_at=now
        )
        if not updated:
            DrainedQueue.objects.get_or_create(
                vhost=vhost,
                name=name,
                defaults={"first_seen_at": now, "last_seen_at": now, "last_arrival_at": now},
            )


def note_queues(vhost: str, queues: list[dict]) -> None:
    """Record the queues the drainer matched, so the console lists them before any arrival."""
    now = datetime.now(UTC)
    for queue in queues:
        DrainedQueue.objects.update_or_create(
            vhost=vhost,
            name=queue["name"],
            defaults={"queue_type": queue.get("type") or "", "last_seen_at": now},
            create_defaults={
                "queue_type": queue.get("type") or "",
                "first_seen_at": now,
                "last_seen_at": now,
            },
        )
