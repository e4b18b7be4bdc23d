"""The drainer: consume the parking queues, store in batches, ack only after the commit.

Two threads. The main thread owns the AMQP connection: it runs pika's I/O loop (so
heartbeats flow however slow the database is), gathers deliveries into batches and sends
the acks (this module; batches: dlq/drain/batch.py; connecting, reconnecting and stopping:
dlq/drain/lifecycle.py). The writer thread (dlq/drain/writer.py) turns a batch into rows
and commits it (dlq/drain/store.py), then hands the ack back to the main thread through
`add_callback_threadsafe`. What crosses between the two threads, and in which order, is
dlq/drain/handoff.py's. The broker's prefetch window bounds what is held in memory,
whatever the queue depth.

Around each ack, two things keep the idempotency scheme of store.py exact: the batch's
pending record is deleted within microseconds of the ack (pending.PreparedForget), so a crash
almost never leaves an acked batch looking pending; and the ack travels with a note in
this drainer's ack ledger queue (dlq/drain/ledger.py), in one AMQP transaction, so that
after a connection the broker closed, the drainer knows which acks took effect and which
did not (_acked).
Tests: tests/drain/ (test_crash.py, test_outage.py, test_queues.py).
"""

import logging
import os
import queue as queuelib
import socket
import threading
import time
import uuid
from functools import partial

from django.conf import settings

from dlq.broker import amqp, names
from dlq.drain.batch import Gathering
from dlq.drain.handoff import Batch, NoteQueues, Tally, WorkItem
from dlq.drain.ledger import AckLedger
from dlq.drain.lifecycle import Lifecycle
from dlq.drain.queues import Discovery, queues_empty
from dlq.drain.writer import Writer
from dlq.messages.ingest import Delivery, build_row

log = logging.getLogger("dlq.drain")
_PERSISTENT = amqp.make_properties({"delivery_mode": 2}, None)


class Drainer(Lifecycle):
    """One vhost's drainer: its state, its consuming loop and its acks, on its main thread
    (its life cycle: Lifecycle). The writer thread touches it only as handoff.Owner."""

    def __init__(
        self,
        patterns=None,
        once=False,
        broker_url=None,
        batch_size=None,
        prefetch=None,
        flush_ms=None,
        vhost=None,
        writer=None,
        baton=None,
    ):
        """`patterns`: queue names or globs in `vhost` (default: the broker URL's vhost).
        A whole estate, `VHOST/QUEUE` patterns, is dlq/drain/estate.py's: one per vhost."""
        self.once = once
        self.url = broker_url or settings.DLQ_BROKER_URL
        default_vhost = amqp.vhost_of(self.url)
        self.vhost = vhost or default_vhost
        self.queues = Discovery(patterns or settings.DLQ_QUEUES, self.vhost)
        self.prefetch = prefetch or settings.DLQ_DRAIN_PREFETCH
        self.flush_s = (flush_ms or settings.DLQ_DRAIN_FLUSH_MS) / 1000
        self.heartbeat = settings.DLQ_DRAIN_HEARTBEAT
        self.name = f"{names.DRAINER} {socket.gethostname()} pid {os.getpid()}"
        if self.vhost != default_vhost:
            self.name += f" vhost {names.escape_vhost(self.vhost)}"
        self.stopping = threading.Event()
        self.generation = 0  # the channel's: the writer drops batches of older ones
        self.conn = self.channel = None
        self.node = ""  # host:port of the node connected to now ("" while not connected)
        self.consumers: dict[str, str] = {}
        self.unacked: set[str] = set()
        self.ledger = AckLedger(self._put)  # see _acked
        self.foreign_ledgers: list[str] = []  # the writer's answer at start-up (run)
        self.put_items = 0  # handed to the writer (_put); done ones: the writer's tally
        self.tally = Tally()
        self.conn_token, self.seq = "", 0
        self.gathered = Gathering(
            batch_size or settings.DLQ_DRAIN_BATCH, settings.DLQ_DRAIN_BATCH_BYTES
        )
        # A writer of its own, or (dlq/drain/estate.py) the one every vhost's drainer shares.
        self.owns_writer = writer is None
        self.writer = writer or Writer(
            queuelib.Queue(),
            self.name,
            ledger_tokens=lambda: {self.ledger.token},
            queue_count=lambda: len(self.consumers),
            node=lambda: self.node,
        )
        self.work = self.writer.work
        self.baton = baton  # shared with the other vhosts' drainers (dlq/drain/baton.py)
        self.last_activity = time.monotonic()
        self.next_resolve = 0.0

    @property
    def stored(self) -> int:
        """New rows stored from this drainer's batches (counted by the writer thread)."""
        return self.tally.stored

    def _put(self, item: WorkItem) -> None:
        """The one way to the writer thread: the item names this drainer, and is counted."""
        item.owner = self
        self.put_items += 1
        self.work.put(item)

    def _outstanding(self) -> int:
        """This drainer's items the writer has not done yet."""
        return self.put_items - self.tally.done

    def _consume(self) -> bool:
        """Pump the I/O loop; True once a --once drain has found the queues empty."""
        tick = min(self.flush_s / 2, 0.05)
        while not self.stopping.is_set():
            self._pump(tick)
            now = time.monotonic()
            if self.gathered.due(now, self.flush_s) and self._writer_free(now):
                self._flush()
            if now >= self.next_resolve:
                self.next_resolve = now + settings.DLQ_RESOLVE_SECONDS
                self.queues.ask()
            listed = self.queues.answered(self.conn)
            if listed is not None:
                self._subscribe_matching(listed)
            if self.once and self._idle(now):
                if queues_empty(self.conn, list(self.consumers)) and self._nothing_delivered():
                    log.info("queues drained", extra={"stored": self.stored})
                    return True
                self.last_activity = now  # quiet, yet messages wait: the broker is slow
        return False

    def _pump(self, tick: float) -> None:
        """Process what the broker sent, waiting up to `tick` for it; taking turns with the
        other vhosts' drainers when there are any."""
        baton = self.baton
        if baton is None or not baton.shared:
            self.conn.process_data_events(time_limit=tick)
            return
        amqp.wait_for_io(self.conn, tick)
        with baton.turn():  # one read (up to 64 KiB) a turn measured best
            self.conn.process_data_events(time_limit=0)

    def _nothing_delivered(self) -> bool:
        """The broker counts only ready messages: those it delivered before it answered are
        not counted, yet may still wait unread in this connection's buffers (a thread kept
        off the CPU, many vhosts draining at once). They arrived before the answer, so one
        more pass of the I/O loop dispatches them: quiet after it means none."""
        before = self.last_activity
        self.conn.process_data_events(time_limit=0)
        return self.last_activity == before and not self.gathered.deliveries

    def _writer_free(self, now: float) -> bool:
        # A partial batch handed over while the writer is busy would only queue behind the
        # batch in hand: it grows instead, so each transaction stores more messages. A writer
        # shared with busy vhosts may never be free: a batch that has waited ten flush
        # intervals goes anyway, once nothing of this drainer's is queued.
        if not self.work.unfinished_tasks:
            return True
        return not self._outstanding() and self.gathered.due(now, 10 * self.flush_s)

    def _idle(self, now: float) -> bool:
        quiet = now - self.last_activity >= max(0.5, 4 * self.flush_s)
        busy = self.gathered.deliveries or self.unacked or self._outstanding()
        return quiet and not busy

    def _resolve(self) -> None:
        """The queues to drain, waited for (at connect); while consuming, _consume asks for
        them in the background (queues.Discovery)."""
        self.next_resolve = time.monotonic() + settings.DLQ_RESOLVE_SECONDS
        self._subscribe_matching(self.queues.listed(self.conn))

    def _subscribe_matching(self, listed: list[dict]) -> None:
        # Declaring the ledger again keeps it from expiring while this drainer is connected.
        self.ledger.declare(self.channel, self.node)
        matched = self.queues.matching(listed)
        new = [q for q in matched if q["name"] not in self.consumers]
        for queue in new:
            self._subscribe(queue["name"], queue.get("type") == "quorum")
            self.queues.subscribed(queue["name"])
        if new:
            self._put(NoteQueues(matched))
            log.info(
                f"draining {len(self.consumers)} queues",
                extra={"queues": ",".join(sorted(self.consumers)), "added": len(new)},
            )

    def _subscribe(self, name: str, quorum: bool) -> None:
        callback = partial(self._on_message, name, quorum)
        # A tag of its own: the topology page tells the console's consumers from a service's.
        tag = f"{names.DRAINER}.{uuid.uuid4().hex}"
        self.consumers[name] = self.channel.basic_consume(name, callback, consumer_tag=tag)

    def _on_cancel(self, frame) -> None:
        tag = frame.method.consumer_tag
        for name, consumer in list(self.consumers.items()):
            if consumer == tag:
                del self.consumers[name]
                log.warning(
                    "queue was deleted, will resubscribe if it returns", extra={"queue": name}
                )
        self.queues.forget()  # an answer asked for before the deletion would resubscribe it
        self.next_resolve = 0.0

    def _on_message(self, queue, quorum, _channel, method, props, body) -> None:
        if self.stopping.is_set():
            # Stopping: what is not in a batch yet stays unacked and goes back to the queue
            # when the connection closes, after this drainer's batches are acked and forgotten.
            return
        now = self.last_activity = time.monotonic()
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
        if self.gathered.add(delivery, method.delivery_tag, now):
            self._flush()

    def _flush(self) -> None:
        self.seq += 1
        batch_id = f"{self.conn_token}{self.seq:08x}"
        batch = self.gathered.take(batch_id, self.generation, self.drainer_id)
        self.unacked.add(batch.id)
        self._put(batch)

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
            # (tests/drain/test_outage.py lost twins so).
            # After a lost connection, the id left in the ledger names the last ack that
            # took effect (AckLedger.settle_doubts).
            amqp.ack_with_note(
                self.channel, batch.last_tag, self.ledger.name, batch.id.encode(), _PERSISTENT
            )
            # In doubt from the commit on (AckLedger.lost says why a quorum queue matters).
            quorum = any(d.quorum for d in batch.deliveries)
            self.ledger.committing(batch.id, batch.drainer, quorum)
            self.channel.tx_commit()  # about a millisecond: the ledger note is persistent
            self.ledger.answered()
            if batch.forget is not None:
                batch.forget.send_commit()  # now, from this thread: see pending.PreparedForget
            batch.acked = True
        finally:
            batch.done.set()  # the writer forgets the batch now (if acked), not a batch later

    def post_ack(self, batch: Batch) -> bool:
        """From the writer thread: have the main thread ack a committed batch (_acked)."""
        # A closed connection refuses the callback: the batch is redelivered and recognised.
        try:
            self.conn.add_callback_threadsafe(partial(self._acked, batch))
        except amqp.AllErrors:
            return False
        return True

    def _in_flight(self) -> bool:
        """The writer has not settled the forget of this drainer's last batch yet."""
        batch = self.writer.in_flight
        return batch is not None and batch.owner is self
