"""The drainer: consume the parking queues, store in batches, ack only after the commit.

Two threads. The main thread owns the AMQP connection: it runs pika's I/O loop (so
heartbeats flow however slow the database is), gathers deliveries into batches and sends
the acks. The writer thread turns a batch into rows and commits it (dlq/drain/store.py), then
hands the ack back to the main thread through `add_callback_threadsafe`. The broker's
prefetch window bounds what is held in memory, whatever the queue depth.

Around each ack, two things keep the idempotency scheme of store.py exact: the batch's
pending record is deleted within microseconds of the ack (store.PreparedForget), so a crash
almost never leaves an acked batch looking pending; and the ack travels with a note in
this drainer's ack ledger queue, in one AMQP transaction, so that after a connection the
broker closed, the drainer knows which acks took effect and which did not (_acked).
Tests: tests/test_drain_crash.py, test_drain_outage.py, test_drain_queues.py.
"""

import contextlib
import fnmatch
import logging
import os
import queue as queuelib
import random
import re
import socket
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from functools import partial

from django.conf import settings
from django.db import DatabaseError
from django.db import connection as db

from dlq import compiled
from dlq.broker import amqp, mgmt
from dlq.drain import heartbeat, store
from dlq.messages.ingest import Delivery, build_row, fallback_row, legacy_fingerprint

log = logging.getLogger("dlq.drain")
_STOP = object()
# A database outage is retried at least this often: the broker keeps the messages meanwhile,
# and a drainer that waited 30 s after the database came back would only let queues grow.
DB_RETRY_CAP_S = 5.0
LEDGER_PREFIX = "dlq-drain-acks."
# A ledger left behind by a crash goes away by itself after this long unused; until then
# a restarted drainer can settle the dead one's batches with it (_settle_foreign_ledgers).
LEDGER_EXPIRES_S = 3600
_TOKEN = re.compile(r"[0-9a-f]{32}")
LEDGER_ARGUMENTS = {"x-max-length": 1, "x-expires": LEDGER_EXPIRES_S * 1000}
_PERSISTENT = amqp.make_properties({"delivery_mode": 2}, None)


@dataclass(eq=False)  # hashed by identity (Drainer.awaiting)
class Batch:
    id: str
    generation: int
    drainer: str
    deliveries: list[Delivery]
    last_tag: int
    # Set by the main thread once it has decided: acked (sent to the broker) or not.
    done: threading.Event = field(default_factory=threading.Event)
    acked: bool = False
    forget: store.PreparedForget | None = None


class Backoff:
    """0.5 s doubling to a cap, with jitter so that many drainers do not retry in step."""

    def __init__(self, first: float = 0.5, cap: float = 30.0):
        self.first, self.cap, self.current = first, cap, first

    def next(self) -> float:
        wait = self.current * random.uniform(0.8, 1.2)
        self.current = min(self.current * 2, self.cap)
        return wait

    def reset(self) -> None:
        self.current = self.first


def is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def rows_of(deliveries: list[Delivery]) -> list[dict]:
    """The rows to store, made as each message arrived where that worked."""
    rows = []
    for delivery in deliveries:
        try:
            row = delivery.row or build_row(delivery)
        except Exception as e:  # hostile input must never block the queue
            log.exception("could not read a message; storing its bytes as they are")
            row = fallback_row(delivery, e)
        else:
            if delivery.redelivered:  # it may be stored already, by a drainer of 0.1.0
                with contextlib.suppress(Exception):  # its new fingerprint still matches
                    row["_legacy_fingerprint"] = legacy_fingerprint(delivery)
        row["_redelivered"] = delivery.redelivered
        rows.append(row)
    return rows


class Drainer:
    def __init__(
        self,
        patterns=None,
        once=False,
        broker_url=None,
        batch_size=None,
        prefetch=None,
        flush_ms=None,
    ):
        self.patterns = patterns or settings.DLQ_QUEUES
        self.once = once
        self.url = broker_url or settings.DLQ_BROKER_URL
        self.vhost = amqp.vhost_of(self.url)
        self.batch_size = batch_size or settings.DLQ_DRAIN_BATCH
        self.prefetch = prefetch or settings.DLQ_DRAIN_PREFETCH
        self.flush_s = (flush_ms or settings.DLQ_DRAIN_FLUSH_MS) / 1000
        self.max_bytes = settings.DLQ_DRAIN_BATCH_BYTES
        self.heartbeat = settings.DLQ_DRAIN_HEARTBEAT
        self.name = f"dlq-drain {socket.gethostname()} pid {os.getpid()}"
        self.beat = heartbeat.Heartbeat(self.name)  # written by the writer thread only
        self.stopping = threading.Event()
        self.work: queuelib.Queue = queuelib.Queue()
        self.acked: deque[str] = deque()  # batch ids acked whose forgetting failed: retried
        self.finished = False
        self.generation = 0
        self.conn = self.channel = None
        self.consumers: dict[str, str] = {}
        self.unacked: set[str] = set()
        self.awaiting: set[Batch] = set()  # committed batches whose writer waits for the ack
        self.in_flight: Batch | None = None  # the writer's: acked last, forget not settled
        self.forget_conn = store.ForgetConnection()  # the writer's
        # The ack ledger (see _acked): a queue of this drainer that keeps the id of the last
        # batch whose ack the broker processed; the batches acked on the current connection;
        # those acked on a connection that was then lost, until the ledger is read.
        self.ledger_token = uuid.uuid4().hex
        self.ledger = f"{LEDGER_PREFIX}{self.ledger_token}"
        self.foreign_ledgers: list[str] = []  # of drainers that left pending batches behind
        self.conn_token, self.seq = "", 0
        # (batch id, drainer) pairs, not batches: the deliveries must not outlive the ack.
        self.sent_acks: deque[tuple[str, str]] = deque(maxlen=8)
        self.doubts: list[tuple[str, str]] = []
        self.lost_at = 0.0
        self.reported_missing: set[str] = set()
        self._reset_batch()
        self.stored = 0
        self.last_activity = time.monotonic()
        self.next_resolve = 0.0

    # --- the main thread ---------------------------------------------------------------

    def run(self) -> int:
        """Drain until stopped (or, with once, until the queues are empty); the exit code."""
        writer = threading.Thread(target=self._write_loop, name="dlq-writer", daemon=True)
        writer.start()
        found = threading.Event()
        self.work.put(("ledgers", found))
        found.wait(10)  # the writer reads them from the database; no answer, no matter
        backoff = Backoff()
        try:
            while not self.stopping.is_set():
                try:
                    self._connect()
                    backoff.reset()
                    if self._consume():
                        break
                except amqp.AllErrors as e:
                    self._lost(e)
                    if self.once:
                        log.error("broker unavailable, giving up", extra={"error": repr(e)})
                        return 2
                    wait = backoff.next()
                    log.warning(
                        "backing off because the broker is unavailable",
                        extra={"error": repr(e), "retry_in_s": round(wait, 1)},
                    )
                    self.stopping.wait(wait)
            return self._shutdown()
        finally:
            self.finished = True
            self._wake_writer()
            self.work.put(_STOP)
            writer.join(timeout=5)

    def stop(self, *_signal_args) -> None:
        """Signal handler: only set the flag; the loop finishes the batch in hand."""
        self.stopping.set()

    def _connect(self) -> None:
        self.conn = amqp.connect(self.url, self.name, self.heartbeat)
        self.channel = self.conn.channel()
        self.channel.basic_qos(prefetch_count=self.prefetch)
        self.channel.tx_select()  # acks and ledger notes take effect together (_acked)
        self.channel.add_on_cancel_callback(self._on_cancel)
        self.generation += 1
        # Batch ids are this connection's token and a sequence number: in ack order, so
        # that one id read from a ledger settles every batch of that connection up to it.
        self.conn_token, self.seq = uuid.uuid4().hex[:24], 0
        self.drainer_id = f"{self.name} {self.ledger_token} {self.conn_token}"
        self.consumers = {}
        self._reset_batch()
        log.info(
            "connected",
            extra={
                "broker": amqp.describe(self.url),
                "ledger": self.ledger,
                "compiled": compiled.describe(),  # the hot path's speed (setup.py)
            },
        )
        self.channel.queue_declare(self.ledger, durable=True, arguments=LEDGER_ARGUMENTS)
        self._settle_doubts()  # before consuming: restored before any redelivery is stored
        self._settle_foreign_ledgers()
        self._resolve()
        self.last_activity = time.monotonic()  # quiet time counts from here, not from start-up

    def _settle_doubts(self) -> None:
        """After a lost connection: which of its acks took effect? (see _acked)"""
        if not self.doubts:
            return
        if time.monotonic() - self.lost_at > LEDGER_EXPIRES_S - 60:
            log.warning(
                "away too long to read the ack ledger; if the broker dropped acks with the"
                " connection, those batches are stored twice",
                extra={"batches": ",".join(pk for pk, _ in self.doubts)},
            )
            self.doubts = []
            return
        last = self._read_ledger(self.ledger)
        ids = [pk for pk, _ in self.doubts]
        # The ledger names the last batch whose transaction the broker committed: its ack
        # and every earlier one took effect, every later one did not. A ledger naming none
        # of them (empty, or an earlier batch): none of these acks took effect.
        counted = ids.index(last) + 1 if last in ids else 0
        dropped = self.doubts[counted:]
        self.doubts = []
        if counted:
            # A commit whose answer the connection took with it left its batch pending.
            self.work.put(("forget_upto", last))
        if dropped:
            log.warning(
                "the broker dropped acks with the connection; their batches are pending again",
                extra={"batches": ",".join(pk for pk, _ in dropped)},
            )
            self.work.put(("restore", dropped))

    def _read_ledger(self, name: str) -> str | None:
        """The batch id in a ledger, left there for others (None: empty or gone).

        On a channel of its own: the drainer's channel is transactional, and a nack there
        would wait for the next commit."""
        probe = self.conn.channel()
        try:
            method, _, body = probe.basic_get(name, auto_ack=False)
        except amqp.ChannelErrors:
            return None  # expired or deleted: nothing to learn there
        if method:
            probe.basic_nack(method.delivery_tag, requeue=True)
        if probe.is_open:
            probe.close()
        return body.decode(errors="replace") if method else None

    def _settle_foreign_ledgers(self) -> None:
        """At start-up: the pending batches that drainers which died left behind.

        A crash in the microseconds between an ack and the COMMIT of its batch's forgetting
        (store.PreparedForget) leaves an acked batch pending, and twins of its messages
        among the redeliveries would be taken for copies of it. The dead drainer's ledger
        names its last ack that counted: every batch of that connection up to it is
        forgotten, before this drainer stores anything.
        """
        for name in self.foreign_ledgers:
            last = self._read_ledger(name)
            if last is not None:
                self.work.put(("forget_upto", last))
        self.foreign_ledgers = []

    def _consume(self) -> bool:
        """Pump the I/O loop; True once a --once drain has found the queues empty."""
        tick = min(self.flush_s / 2, 0.05)
        while not self.stopping.is_set():
            self.conn.process_data_events(time_limit=tick)
            now = time.monotonic()
            if self.batch and now - self.batch_started >= self.flush_s and self._writer_free():
                self._flush()
            if now >= self.next_resolve:
                self._resolve()
            if self.once and self._idle(now):
                if self._queues_empty():
                    log.info("queues drained", extra={"stored": self.stored})
                    return True
                self.last_activity = now  # quiet, yet messages wait: the broker is slow
        return False

    def _writer_free(self) -> bool:
        # A partial batch handed over while the writer is busy would only queue behind
        # the batch in hand: it grows instead, so each transaction stores more messages.
        return not self.work.unfinished_tasks

    def _idle(self, now: float) -> bool:
        quiet = now - self.last_activity >= max(0.5, 4 * self.flush_s)
        return quiet and not self.batch and not self.unacked and not self.work.unfinished_tasks

    def _queues_empty(self) -> bool:
        """For --once: a quiet spell alone does not prove the queues empty (a loaded broker
        can pause longer than the quiet time); ask the broker for their ready counts."""
        probe = None
        for name in list(self.consumers):
            if probe is None or not probe.is_open:
                probe = self.conn.channel()
            try:
                if probe.queue_declare(name, passive=True).method.message_count:
                    probe.close()
                    return False
            except amqp.ChannelErrors:
                continue  # deleted meanwhile: nothing left to drain there
        if probe is not None and probe.is_open:
            probe.close()
        return True

    def _resolve(self) -> None:
        self.next_resolve = time.monotonic() + settings.DLQ_RESOLVE_SECONDS
        try:
            listed = mgmt.list_queues(self.vhost)
        except mgmt.ManagementError as e:
            log.warning("queue discovery failed, keeping current queues", extra={"error": str(e)})
            listed = self._probe_literals()
        listed = [
            q for q in listed if not q.get("exclusive") and not q["name"].startswith(LEDGER_PREFIX)
        ]
        # Declaring the ledger again keeps it from expiring while this drainer is connected.
        self.channel.queue_declare(self.ledger, durable=True, arguments=LEDGER_ARGUMENTS)
        names = {q["name"] for q in listed}
        for pattern in self.patterns:
            if (
                not is_glob(pattern)
                and pattern not in names
                and pattern not in self.reported_missing
            ):
                log.warning("queue does not exist (yet)", extra={"queue": pattern})
                self.reported_missing.add(pattern)
        matched = [
            q for q in listed if any(fnmatch.fnmatchcase(q["name"], p) for p in self.patterns)
        ]
        new = [q for q in matched if q["name"] not in self.consumers]
        for queue in new:
            self._subscribe(queue["name"], queue.get("type") == "quorum")
            self.reported_missing.discard(queue["name"])
        if new:
            self.work.put(("note", matched))
            log.info(
                f"draining {len(self.consumers)} queues",
                extra={"queues": ",".join(sorted(self.consumers)), "added": len(new)},
            )

    def _probe_literals(self) -> list[dict]:
        """Without the management API, literal queue names are checked one by one."""
        found = []
        for name in (p for p in self.patterns if not is_glob(p)):
            probe = self.conn.channel()
            try:
                probe.queue_declare(name, passive=True)
                found.append({"name": name})
            except amqp.ChannelErrors:
                continue  # the broker closed the probe channel: no such queue
            if probe.is_open:
                probe.close()
        return found

    def _subscribe(self, name: str, quorum: bool) -> None:
        callback = partial(self._on_message, name, quorum)
        self.consumers[name] = self.channel.basic_consume(name, callback)

    def _on_cancel(self, frame) -> None:
        tag = frame.method.consumer_tag
        for name, consumer in list(self.consumers.items()):
            if consumer == tag:
                del self.consumers[name]
                log.warning(
                    "queue was deleted, will resubscribe if it returns", extra={"queue": name}
                )
        self.next_resolve = 0.0

    def _on_message(self, queue, quorum, _channel, method, props, body) -> None:
        if self.stopping.is_set():
            # Stopping: what is not in a batch yet stays unacked and goes back to the queue
            # when the connection closes, after this drainer's batches are acked and forgotten.
            return
        now = self.last_activity = time.monotonic()
        if not self.batch:
            self.batch_started = now
        delivery = Delivery(
            queue, self.vhost, method.exchange, method.routing_key, method.redelivered, props,
            body, quorum,
        )  # fmt: skip
        # The row is made here, while the writer waits for the database with the batch
        # before: made by the writer, it would wait for the database's answer instead.
        try:  # noqa: SIM105 (suppress() would make a context manager for every message)
            delivery.row = build_row(delivery)
        except Exception:  # hostile input: the writer tries again, and says why (rows_of)
            pass
        batch = self.batch
        batch.append(delivery)
        self.batch_bytes += len(body)
        self.last_tag = method.delivery_tag
        if len(batch) >= self.batch_size or self.batch_bytes >= self.max_bytes:
            self._flush()

    def _reset_batch(self) -> None:
        self.batch: list[Delivery] = []
        self.batch_bytes = 0
        self.batch_started = 0.0
        self.last_tag = 0

    def _flush(self) -> None:
        self.seq += 1
        batch_id = f"{self.conn_token}{self.seq:08x}"
        batch = Batch(batch_id, self.generation, self.drainer_id, self.batch, self.last_tag)
        self._reset_batch()
        self.unacked.add(batch.id)
        self.work.put(batch)

    def _acked(self, batch: Batch) -> None:
        """Runs on the main thread once the writer has committed the batch."""
        try:
            self.unacked.discard(batch.id)
            self.last_activity = time.monotonic()
            if batch.generation != self.generation or not self.channel.is_open:
                log.warning(
                    "batch stored after its channel closed;"
                    " the redelivered copies will be recognised",
                    extra={"batch": batch.id},
                )
                return
            # The ack ledger. A broker that closes the connection (an operator, a restart)
            # drops the frames it has not processed yet, and an ack dropped that way
            # redelivers a batch that is forgotten by now: stored twice. Making such batches
            # pending again blindly is no better: when the ack did count, twins of their
            # messages would be taken for copies. So the batch id goes to this drainer's
            # ledger queue (length 1) in the same AMQP transaction as the ack: neither takes
            # effect before the commit, and the channel applies both when it processes the
            # commit. (RabbitMQ promises no atomicity across queues if a queue fails during
            # the commit; a closed connection is not that case.) Sent one after the other
            # without a transaction, the broker could apply the ack and lose the note with
            # the connection, and a batch whose ack counted was made pending again
            # (tests/test_drain_outage.py lost twins so).
            # After a lost connection, the id left in the ledger names the last ack that
            # took effect (_settle_doubts).
            impl = self.channel._impl
            impl.basic_ack(batch.last_tag, multiple=True)
            impl.basic_publish("", self.ledger, batch.id.encode(), _PERSISTENT)
            self.sent_acks.append((batch.id, batch.drainer))  # in doubt from the commit on
            self.channel.tx_commit()  # about a millisecond: the ledger note is persistent
            if batch.forget is not None:
                batch.forget.send_commit()  # now, from this thread: see store.PreparedForget
            batch.acked = True
        finally:
            batch.done.set()  # the writer forgets the batch now (if acked), not a batch later

    def _wake_writer(self) -> None:
        for batch in list(self.awaiting):
            batch.done.set()  # not acked: the writer rolls its forget back

    def _lost(self, error: Exception) -> None:
        """The connection or channel failed: what is unacked will be redelivered."""
        self.generation += 1  # the writer drops batches of the old channel it has not begun
        self._wake_writer()
        if self.sent_acks:
            self.doubts = list(self.sent_acks)  # settled against the ledger once reconnected
            self.sent_acks.clear()
            self.lost_at = time.monotonic()
        self.unacked.clear()
        self._reset_batch()
        self.consumers = {}
        if self.conn and self.conn.is_open:
            with contextlib.suppress(amqp.AllErrors):
                self.conn.close()
        log.warning("connection lost", extra={"error": repr(error)})

    def _shutdown(self) -> int:
        """Finish the batch in hand: commit, ack and forget it, then close.

        No basic.cancel first: pika answers it by rejecting (requeueing) the deliveries it
        has buffered, and another drainer would receive those as redeliveries while this
        drainer's batches are still pending, and take twins of them for copies. Deliveries
        that arrive from now on are left unacked instead; closing the connection returns
        them to the queue once nothing of this drainer is pending any more.
        """
        self.stopping.set()
        if not (self.conn and self.conn.is_open):
            if self.doubts:
                log.warning(
                    "stopped before reading the ack ledger; if the broker dropped acks with"
                    " the connection, those batches are stored twice",
                    extra={"batches": ",".join(pk for pk, _ in self.doubts)},
                )
            return 0
        try:
            if self.batch:
                self._flush()
            deadline = time.monotonic() + 60
            # Until the writer has settled the last forget too: with the ledger deleted and
            # the connection closed, a batch left pending could no longer be settled.
            while (
                self.unacked or self.work.unfinished_tasks or self.in_flight is not None
            ) and time.monotonic() < deadline:
                self.conn.process_data_events(time_limit=0.05)
            self.channel.queue_delete(self.ledger)  # a clean close settles every ack
            self.conn.close()
        except amqp.AllErrors as e:
            self.generation += 1  # the writer must not wait for acks that cannot come
            self._wake_writer()
            # No ledger to read any more: if the broker dropped the last acks, those batches
            # are stored twice.
            log.warning(
                "connection lost while stopping",
                extra={
                    "error": repr(e),
                    "last_acked": ",".join(pk for pk, _ in list(self.sent_acks)[-2:]),
                },
            )
            return 0 if not self.unacked else 1
        if self.unacked:
            log.error(
                "stopped with batches not stored; the broker keeps them",
                extra={"batches": len(self.unacked)},
            )
            return 1
        log.info("stopped", extra={"stored": self.stored})
        return 0

    # --- the writer thread -------------------------------------------------------------

    def _write_loop(self) -> None:
        try:
            while True:
                try:
                    item = self.work.get(timeout=0.2)
                except queuelib.Empty:
                    try:
                        self._settle_in_flight()
                        self._forget_acked()
                    except Exception:  # a dead writer would stall the drainer with no sign
                        log.exception("the writer failed while idle; it goes on")
                    self.beat.tick(len(self.consumers))
                    continue
                try:
                    if not isinstance(item, Batch):
                        # Before anything else touches pending batches: the last batch's
                        # forget holds its row locked until its ack is decided.
                        self._settle_in_flight()
                    if item is _STOP:
                        self._forget_acked()
                        return
                    if isinstance(item, tuple) and item[0] == "note":
                        self._note_queues(item[1])
                    elif isinstance(item, tuple) and item[0] == "restore":
                        self._restore(item[1])
                    elif isinstance(item, tuple) and item[0] == "ledgers":
                        self._find_foreign_ledgers(item[1])
                    elif isinstance(item, tuple) and item[0] == "forget_upto":
                        self._forget_upto(item[1])
                    elif item.generation == self.generation:
                        self._store(item)
                except Exception:  # a dead writer would stall the drainer with no sign
                    log.exception("the writer failed on an item; the broker keeps its messages")
                finally:
                    self.work.task_done()
        finally:
            self.beat.stopped()
            self.forget_conn.close()
            db.close()

    def _store(self, batch: Batch) -> None:
        rows = rows_of(batch.deliveries)
        backoff = Backoff(cap=DB_RETRY_CAP_S)
        while True:
            if batch.generation != self.generation:
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
        self.stored += new
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
        self.beat.batch_stored(rows, new, time.monotonic() - started, len(self.consumers))

    def _ack_and_forget(self, batch: Batch) -> None:
        """Have the main thread ack the batch, and forget the batch as the ack goes out.

        A pending batch that is already acked makes redelivered twins of its messages look
        like copies (store.py), so the gap between the ack and the forget must be as small
        as possible: the forget is prepared now and committed by the main thread right
        after the ack (store.PreparedForget). It used to ride on the next batch's
        transaction, so nearly every crash left an acked batch pending behind it.

        The writer does not wait for the ack: it stores the next batch meanwhile, and
        settles this one's forget before preparing the next (_settle_in_flight).
        """
        try:
            self._settle_in_flight()
        except Exception:  # this batch's ack must go out whatever went wrong with the last
            log.exception("could not settle the last batch's forget; it stays pending")
        try:
            batch.forget = store.PreparedForget.start([batch.id], self.forget_conn)
        except DatabaseError as e:
            log.warning("could not prepare forgetting a batch", extra={"error": str(e).strip()})
        self.awaiting.add(batch)
        self.in_flight = batch
        if not self._post(partial(self._acked, batch)):
            batch.done.set()  # no ack can come: the forget is rolled back

    def _settle_in_flight(self) -> None:
        """The batch whose ack went out last: wait for the main thread's decision, then read
        the outcome of its forget (or forget it now, if that could not be prepared)."""
        batch = self.in_flight
        if batch is None:
            return
        try:
            # Blocked without polling: a waking writer would contend for the GIL just when
            # the main thread must send the ack and the COMMIT back to back. _wake_writer
            # ends the wait when the connection is gone.
            while not batch.done.wait(1.0):
                if batch.generation != self.generation or self.finished:
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
            self.in_flight = None  # _shutdown waits for this before it closes the connection

    def _post(self, callback) -> bool:
        # A closed connection refuses the callback: the batch is redelivered and recognised.
        try:
            self.conn.add_callback_threadsafe(callback)
        except amqp.AllErrors:
            return False
        return True

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
            store.forget_batches(forget)
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
                store.restore_pending(batches)
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

    def _find_foreign_ledgers(self, found: threading.Event) -> None:
        try:
            drainers = store.pending_drainers(max_age_s=LEDGER_EXPIRES_S)
        except DatabaseError as e:
            db.close()
            log.warning("could not look for pending batches", extra={"error": str(e).strip()})
            drainers = []
        finally:
            found.set()
        tokens = {part for d in drainers for part in d.split() if _TOKEN.fullmatch(part)}
        self.foreign_ledgers = [f"{LEDGER_PREFIX}{t}" for t in sorted(tokens - {self.ledger_token})]

    def _forget_upto(self, last_acked: str) -> None:
        try:
            n = store.forget_acked_upto(last_acked)
        except DatabaseError as e:
            db.close()
            log.warning("could not settle a stopped drainer's batches", extra={"error": str(e)})
            return
        if n:
            log.warning(
                "forgot batches that a stopped drainer had acked (its ack ledger says so)",
                extra={"batches": n, "up_to": last_acked},
            )

    def _note_queues(self, queues: list[dict]) -> None:
        try:
            store.note_queues(self.vhost, queues)
        except DatabaseError as e:
            db.close()
            log.warning("could not record drained queues", extra={"error": str(e).strip()})
