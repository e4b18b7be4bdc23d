"""The pending-batch records after their batch is stored: forgetting them as the ack goes
out (`PreparedForget`, on a connection of its own), making them pending again when the broker
dropped an ack, and settling a stopped drainer's from its ack ledger. Why they exist:
dlq/drain/store.py."""

import contextlib
import select
import time
from datetime import UTC, datetime, timedelta

import psycopg
from django.db import OperationalError, connection
from psycopg import pq

from dlq.models import PendingBatch


def forget_batches(batch_ids: list[str]) -> None:
    """Acked batches can no longer be redelivered: drop their pending records."""
    if batch_ids:
        PendingBatch.objects.filter(id__in=list(batch_ids)).delete()


def pending_drainers(max_age_s: float) -> list[str]:
    """The drainers (connections) with batches pending for at most max_age_s seconds."""
    since = datetime.now(UTC) - timedelta(seconds=max_age_s)
    return list(
        PendingBatch.objects.filter(created_at__gte=since)
        .values_list("drainer", flat=True)
        .distinct()
    )


def forget_acked_upto(last_acked: str) -> int:
    """Forget the batches of one drainer connection up to the last one whose ack counted.

    Batch ids are a 24-character connection token and an 8-digit sequence number
    (dlq/drain/drainer.py), so the ids of one connection sort in ack order, and an ack of a later
    batch (multiple=True) covers every earlier one."""
    if len(last_acked) != 32:
        return 0
    found = PendingBatch.objects.filter(id__startswith=last_acked[:24], id__lte=last_acked)
    return found.delete()[0]


def restore_pending(batches: list[tuple[str, str]]) -> None:
    """(batch id, drainer) pairs pending again: the broker dropped their acks and redelivers
    their messages. Their rows still name the batch, so the copies are recognised."""
    now = datetime.now(UTC)
    PendingBatch.objects.bulk_create(
        [PendingBatch(id=pk, drainer=drainer, created_at=now) for pk, drainer in batches],
        ignore_conflicts=True,
    )


class PreparedForget:
    """Forgetting a batch, made durable within microseconds of its ack (PostgreSQL).

    Between the broker taking an ack and the database dropping the batch's PendingBatch
    row, a crash leaves an acked batch looking pending, and its twins would be taken for
    copies. Done by the writer thread after the ack, that gap was milliseconds wide (a
    thread switch, then a round trip; tens of ms on a busy machine), and repeated SIGKILLs
    hit it. So the writer runs the DELETE in an open transaction *before* the ack, and the
    drainer's main thread sends COMMIT right after `basic_ack`, from the same thread and
    without waiting for the answer (`send_commit`); the writer reads the answer later
    (`finish`). A crash before the COMMIT is sent rolls the deletion back, so nothing is
    forgotten that was not acked.

    It runs on a connection of its own (`ForgetConnection`), so that the writer stores the
    next batch while the ack is on its way: the broker's answer to it waits behind the
    deliveries already sent, tens of milliseconds at full speed.
    """

    def __init__(self, batch_ids: list[str], conn: "ForgetConnection"):
        self.batch_ids = batch_ids
        self.conn = conn
        self.sent = False
        marks = ", ".join(["%s"] * len(batch_ids))
        conn.execute(  # autocommit: BEGIN is ours to send; one round trip
            f"BEGIN; DELETE FROM {PendingBatch._meta.db_table} WHERE id IN ({marks})", batch_ids
        )
        self.pgconn = conn.pgconn

    @classmethod
    def start(cls, batch_ids: list[str], conn: "ForgetConnection") -> "PreparedForget | None":
        """Prepared on PostgreSQL; None elsewhere (the writer then forgets after the ack)."""
        return cls(batch_ids, conn) if conn.usable() else None

    def send_commit(self) -> None:
        """On the drainer's main thread, right after the ack: send COMMIT, do not wait."""
        try:
            self.pgconn.send_query(b"COMMIT")
        except Exception:  # the database connection broke: the writer retries the forget
            return
        self.sent = True

    def finish(self, timeout: float = 30.0) -> bool:
        """On the writer thread: the COMMIT's outcome, or ROLLBACK if none was sent.

        True if the batch is forgotten; raises DatabaseError when the outcome is unknown.
        """
        if not self.sent:
            self.conn.execute("ROLLBACK")
            return False
        pgconn, deadline, ok, error = self.pgconn, time.monotonic() + timeout, False, ""
        try:
            while True:
                while pgconn.is_busy():
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise OperationalError("no answer to COMMIT")
                    select.select([pgconn.socket], [], [], min(left, 1.0))
                    pgconn.consume_input()
                result = pgconn.get_result()
                if result is None:
                    break
                ok = ok or result.status == pq.ExecStatus.COMMAND_OK
                error = error or (result.error_message or b"").decode(errors="replace")
        except (psycopg.Error, OSError, ValueError) as e:  # ValueError: a closed socket
            self.conn.close()
            raise OperationalError(str(e)) from e
        except OperationalError:
            self.conn.close()
            raise
        if not ok:
            self.conn.close()
            raise OperationalError(f"COMMIT failed: {error.strip()}")
        return True


class ForgetConnection:
    """The writer's second PostgreSQL connection, for PreparedForget only (autocommit).

    Made like Django's own from the same settings; remade after an error. On other
    databases it is not usable, and batches are forgotten after their ack instead.
    """

    def __init__(self):
        self.conn = None

    def usable(self) -> bool:
        if connection.vendor != "postgresql":
            return False
        if self.conn is None or self.conn.closed:
            try:
                self.conn = connection.get_new_connection(connection.get_connection_params())
                self.conn.autocommit = True
            except psycopg.Error as e:
                self.close()
                raise OperationalError(str(e)) from e
        return hasattr(self.conn, "pgconn")

    @property
    def pgconn(self):
        return self.conn.pgconn

    def execute(self, sql: str, params=()) -> None:
        try:
            with psycopg.ClientCursor(self.conn) as cursor:  # several statements at once
                cursor.execute(sql, params)
        except psycopg.Error as e:
            self.close()
            raise OperationalError(str(e)) from e

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):
                self.conn.close()
        self.conn = None
