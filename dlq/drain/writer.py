"""The drainer's writer thread: store each batch in one transaction, have the main thread
ack it, and forget the batch as the ack goes out (dlq/drain/drainer.py says how the two
threads work together, dlq/drain/handoff.py what crosses between them).
"""

import logging
import queue as queuelib
import time
from collections import deque
from collections.abc import Callable

from django.db import DatabaseError
from django.db import connection as db

from dlq.drain import heartbeat, pending, store
from dlq.drain.backoff import Backoff
from dlq.drain.batch import rows_of
from dlq.drain.handoff import (
    STOP,
    Batch,
    FindLedgers,
    ForgetUpto,
    NoteQueues,
    Owner,
    Restore,
    WorkItem,
)
from dlq.drain.ledger import LEDGER_EXPIRES_S, foreign_ledgers

log = logging.getLogger("dlq.drain")
# A database outage is retried at least this often: the broker keeps the messages meanwhile,
# and a drainer that waited 30 s after the database came back would only let queues grow.
DB_RETRY_CAP_S = 5.0


class Writer:
    """The writer thread (`loop`), and what it owns. Drainers hand it work items through
    `work` (dlq/drain/handoff.py): batches, and a few chores. One writer may serve several
    drainers (dlq/drain/estate.py: one per vhost): every item names its drainer (`owner`),
    whose channel generation, ack and tally it concerns. Besides, a drainer only reads
    `in_flight` and `work.unfinished_tasks`, and calls `wake` and (the writer's owner)
    `finish`."""

    def __init__(
        self,
        work: queuelib.Queue[WorkItem],
        name: str,
        ledger_tokens: Callable[[], set[str]],
        queue_count: Callable[[], int],
        node: Callable[[], str] = str,
    ):
        self.work = work
        self.ledger_tokens = ledger_tokens  # the ledgers of live drainers are not foreign
        self.queue_count = queue_count  # for the heartbeat
        self.beat = heartbeat.Heartbeat(name, node)
        self.acked: deque[str] = deque()  # batch ids acked whose forgetting failed: retried
        self.finished = False  # set once every drainer it serves has stopped (finish)
        self.awaiting: set[Batch] = set()  # committed batches whose writer waits for the ack
        self.in_flight: Batch | None = None  # acked last, forget not settled
        self.forget_conn = pending.ForgetConnection()

    # --- called from the main thread ----------------------------------------------------

    def wake(self, owner: Owner | None = None) -> None:
        """A drainer's channel is gone: no ack comes for its batches (all: every drainer's)."""
        for batch in list(self.awaiting):
            if owner is None or batch.owner is owner:
                batch.done.set()  # not acked: the writer rolls its forget back

    def finish(self) -> None:
        """The main thread has stopped: no ack comes any more; the writer ends its work."""
        self.finished = True
        self.wake()
        self.work.put(STOP)

    # --- the writer thread ----------------------------------------------------------------

    def loop(self) -> None:
        try:
            while True:
                try:
                    item = self.work.get(timeout=0.2)
                except queuelib.Empty:
                    try:
                        self._settle_in_flight()
                        self._forget_acked()
                        self.beat.tick(self.queue_count())
                    except Exception:  # a dead writer would stall the drainer with no sign
                        log.exception("the writer failed while idle; it goes on")
                    continue
                owner = item.owner
                try:
                    if not isinstance(item, Batch):
                        # Before anything else touches pending batches: the last batch's
                        # forget holds its row locked until its ack is decided.
                        self._settle_in_flight()
                    if item is STOP:
                        self._forget_acked()
                        return
                    self._do(item)
                except Exception:  # a dead writer would stall the drainer with no sign
                    log.exception("the writer failed on an item; the broker keeps its messages")
                finally:
                    if owner is not None:
                        owner.tally.done += 1
                    self.work.task_done()
        finally:
            self.beat.stopped()
            self.forget_conn.close()
            db.close()

    def _do(self, item: WorkItem) -> None:
        if isinstance(item, Batch):
            if item.generation == item.owner.generation:
                self._store(item)
        elif isinstance(item, NoteQueues):
            self._note_queues(item.owner.vhost, item.queues)
        elif isinstance(item, Restore):
            self._restore(item.batches)
        elif isinstance(item, FindLedgers):
            self._find_foreign_ledgers(item)
        elif isinstance(item, ForgetUpto):
            self._forget_upto(item.last_acked)

    def _store(self, batch: Batch) -> None:
        rows = rows_of(batch.deliveries)
        backoff = Backoff(cap=DB_RETRY_CAP_S)
        while True:
            if batch.generation != batch.owner.generation:
                # The channel is gone (maybe while we slept): the broker redelivers these,
                # perhaps to another drainer already; storing them now could make copies.
                return
            forget = self._take_acked()
            started = time.monotonic()
            try:
                new = store.store_batch(batch.id, batch.drainer, rows, forget)
                break
            except Exception as e:
                self.acked.extend(forget)
                db.close()
                wait = backoff.next()
                if isinstance(e, DatabaseError):
                    log.warning(
                        "backing off because the database is unavailable",
                        extra={"error": str(e).strip(), "retry_in_s": round(wait, 1)},
                    )
                else:
                    log.exception("could not store a batch", extra={"retry_in_s": round(wait, 1)})
                time.sleep(wait)
        batch.owner.tally.stored += new
        log.info(
            "batch stored",
            extra={
                "batch": batch.id,
                "messages": len(rows),
                "new": new,
                "ms": round((time.monotonic() - started) * 1000, 1),
            },
        )
        self._ack_and_forget(batch)
        self.beat.batch_stored(rows, new, time.monotonic() - started, self.queue_count())

    def _ack_and_forget(self, batch: Batch) -> None:
        """Have the main thread ack the batch, and forget the batch as the ack goes out.

        A pending batch that is already acked makes redelivered twins of its messages look
        like copies (store.py), so the gap between the ack and the forget must be as small
        as possible: the forget is prepared now and committed by the main thread right
        after the ack (pending.PreparedForget). It used to ride on the next batch's
        transaction, so nearly every crash left an acked batch pending behind it.

        The writer does not wait for the ack: it stores the next batch meanwhile, and
        settles this one's forget before preparing the next (_settle_in_flight).
        """
        try:
            self._settle_in_flight()
        except Exception:  # this batch's ack must go out whatever went wrong with the last
            log.exception("could not settle the last batch's forget; it stays pending")
        try:
            batch.forget = pending.PreparedForget.start([batch.id], self.forget_conn)
        except DatabaseError as e:
            log.warning("could not prepare forgetting a batch", extra={"error": str(e).strip()})
        self.awaiting.add(batch)
        self.in_flight = batch
        if not batch.owner.post_ack(batch):
            batch.done.set()  # no ack can come: the forget is rolled back

    def _settle_in_flight(self) -> None:
        """The batch whose ack went out last: wait for the main thread's decision, then read
        the outcome of its forget (or forget it now, if that could not be prepared)."""
        batch = self.in_flight
        if batch is None:
            return
        try:
            # Blocked without polling: a waking writer would contend for the GIL just when
            # the main thread must send the ack and the COMMIT back to back. wake() ends
            # the wait when the connection is gone.
            while not batch.done.wait(1.0):
                if batch.generation != batch.owner.generation or self.finished:
                    break  # no ack can come any more; the main thread has moved on
            self.awaiting.discard(batch)
            forgotten = False
            if batch.forget is not None:
                try:
                    forgotten = batch.forget.finish()
                except DatabaseError as e:
                    log.warning("forgetting a batch failed", extra={"error": str(e).strip()})
            if batch.acked and not forgotten:
                self._forget([batch.id])  # SQLite, or the prepared forget failed: now or later
        finally:
            # Lifecycle._shutdown waits for this before it closes the connection.
            self.in_flight = None

    def _take_acked(self) -> list[str]:
        taken = []
        while self.acked:
            taken.append(self.acked.popleft())
        return taken

    def _forget_acked(self) -> None:
        if self.acked:
            self._forget([])

    def _forget(self, batch_ids: list[str]) -> None:
        forget = [*self._take_acked(), *batch_ids]
        try:
            pending.forget_batches(forget)
        except DatabaseError as e:
            self.acked.extend(forget)  # retried with the next batch, or when idle
            db.close()
            log.warning("could not forget acked batches", extra={"error": str(e).strip()})

    def _restore(self, batches: list[tuple[str, str]]) -> None:
        """Make batches pending again whose acks the broker dropped: it redelivers them."""
        ids = {pk for pk, _ in batches}
        self.acked.extend(i for i in self._take_acked() if i not in ids)  # no late forget
        backoff = Backoff(cap=DB_RETRY_CAP_S)
        while True:
            try:
                pending.restore_pending(batches)
                return
            except DatabaseError as e:
                db.close()
                if self.finished:
                    log.error("could not make batches pending again", extra={"error": str(e)})
                    return
                wait = backoff.next()
                log.warning(
                    "backing off because the database is unavailable",
                    extra={"error": str(e).strip(), "retry_in_s": round(wait, 1)},
                )
                time.sleep(wait)

    def _find_foreign_ledgers(self, asked: FindLedgers) -> None:
        try:
            try:
                drainers = pending.pending_drainers(max_age_s=LEDGER_EXPIRES_S)
            except DatabaseError as e:
                db.close()
                log.warning("could not look for pending batches", extra={"error": str(e).strip()})
                drainers = []
            asked.ledgers = foreign_ledgers(drainers, self.ledger_tokens())
        finally:
            asked.answered.set()  # after the list is there: the drainer reads it once set

    def _forget_upto(self, last_acked: str) -> None:
        try:
            n = pending.forget_acked_upto(last_acked)
        except DatabaseError as e:
            db.close()
            log.warning("could not settle a stopped drainer's batches", extra={"error": str(e)})
            return
        if n:
            log.warning(
                "forgot batches that a stopped drainer had acked (its ack ledger says so)",
                extra={"batches": n, "up_to": last_acked},
            )

    def _note_queues(self, vhost: str, queues: list[dict]) -> None:
        try:
            store.note_queues(vhost, queues)
        except DatabaseError as e:
            db.close()
            log.warning("could not record drained queues", extra={"error": str(e).strip()})
