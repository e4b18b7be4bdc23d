"""How many messages each queue holds (all, and parked) and its newest arrival, exact.

On PostgreSQL the counts are kept by triggers on the message table as tally rows, one per
writing statement and queue (dlq/migrations/0021_queue_tallies.py says why and how): a
read sums a few rows per queue instead of counting the queue's messages. `fold`, run by
beat, sums them into one row per queue so reads stay small however much arrives. Other
databases count the messages at read time.
"""

from django.db import connection
from django.db.models import Count, Max

from dlq.models import Message, QueueTally, Status

TABLE = QueueTally._meta.db_table

SUM_SQL = (
    f"SELECT vhost, queue, sum(stored), sum(parked), max(last_received_at) FROM {TABLE}"
    " {where} GROUP BY vhost, queue HAVING sum(stored) > 0"
)
# One statement: the rows it deletes are the ones it sums; rows written meanwhile are not
# seen by its DELETE and stay as they are. A queue with nothing stored is left out.
FOLD_SQL = (
    f"WITH gone AS (DELETE FROM {TABLE}"
    " RETURNING vhost, queue, stored, parked, last_received_at)"
    f" INSERT INTO {TABLE} (vhost, queue, stored, parked, last_received_at)"
    " SELECT vhost, queue, sum(stored), sum(parked), max(last_received_at) FROM gone"
    " GROUP BY vhost, queue HAVING sum(stored) <> 0"
)


def per_queue(vhost: str | None = None) -> dict[tuple[str, str], dict]:
    """{(vhost, queue): {"stored", "parked", "last"}} for every queue holding messages;
    with `vhost`, that vhost's only. `last` is the newest arrival."""
    if connection.vendor != "postgresql":
        return _counted(vhost)
    where, params = ("WHERE vhost = %s", [vhost]) if vhost is not None else ("", [])
    with connection.cursor() as cursor:
        cursor.execute(SUM_SQL.format(where=where), params)
        rows = cursor.fetchall()
    return {
        (vh, queue): {"stored": int(stored), "parked": int(parked), "last": last}
        for vh, queue, stored, parked, last in rows
    }


def fold() -> int:
    """Sum the tally rows into one per queue; the number of queues holding messages."""
    if connection.vendor != "postgresql":
        return 0
    with connection.cursor() as cursor:
        cursor.execute(FOLD_SQL)
        return max(cursor.rowcount, 0)


def _counted(vhost: str | None) -> dict[tuple[str, str], dict]:
    """The same, counted from the messages (one index-only scan of msg_overview)."""
    messages = Message.objects.all() if vhost is None else Message.objects.filter(vhost=vhost)
    per_status = (
        messages.order_by()
        .values("vhost", "queue", "status")
        .annotate(count=Count("*"), last=Max("received_at"))
    )
    counts: dict[tuple[str, str], dict] = {}
    for row in per_status:
        key = (row["vhost"], row["queue"])
        entry = counts.setdefault(key, {"stored": 0, "parked": 0, "last": row["last"]})
        entry["stored"] += row["count"]
        if row["status"] == Status.PARKED:
            entry["parked"] = row["count"]
        entry["last"] = max(row["last"], entry["last"])
    return counts
