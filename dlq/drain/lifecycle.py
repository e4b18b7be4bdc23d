"""A drainer's life: start-up, connecting, reconnecting after a loss, and stopping.

The other half of Drainer (dlq/drain/drainer.py), which holds the drainer's state, its
consuming loop and its acks. Here: the drainer waits for the writer thread to name the ack
ledgers that dead drainers left behind; it connects (its ledger declared, the acks in doubt
settled against it, those ledgers read, the queues resolved) and consumes until stopped or,
with once, until the queues are empty; a lost connection or channel makes what is unacked
the broker's again and backs off before the next try; and a stop finishes the batch in hand
(stored, acked and forgotten) before the connection closes.
"""

import contextlib
import logging
import threading
import time
import uuid

from dlq import compiled
from dlq.broker import amqp
from dlq.drain.backoff import Backoff
from dlq.drain.handoff import FindLedgers

log = logging.getLogger("dlq.drain")


class Lifecycle:
    """Drainer's life cycle, on its main thread (dlq/drain/drainer.py sets the state)."""

    def run(self) -> int:
        """Drain until stopped (or, with once, until the queues are empty); the exit code."""
        if self.owns_writer:
            writer = threading.Thread(target=self.writer.loop, name="dlq-writer", daemon=True)
            writer.start()
        asked = FindLedgers()
        self._put(asked)
        # Before consuming: a dead drainer's acked batch left pending would make twins of its
        # messages look like copies. A shared writer may answer after other vhosts' batches.
        while not asked.answered.wait(1) and not self.stopping.is_set():
            pass
        if asked.answered.is_set():  # else stopping: no connection follows
            self.foreign_ledgers = asked.ledgers
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
                        extra={"error": repr(e), "vhost": self.vhost, "retry_in_s": round(wait, 1)},
                    )
                    self.stopping.wait(wait)
            return self._shutdown()
        finally:
            self._let_go()
            if self.owns_writer:
                self.writer.finish()
                writer.join(timeout=5)

    def _let_go(self) -> None:
        """This drainer is done, however it ended: a writer shared with other vhosts must
        neither wait for its acks nor store its batches still queued (the broker gives
        their messages to someone else once the connection is gone)."""
        self.generation += 1
        self.node = ""
        self.writer.wake(self)
        if self.conn is not None and self.conn.is_open:
            with contextlib.suppress(*amqp.AllErrors):
                self.conn.close()

    def stop(self, *_signal_args) -> None:
        """Signal handler: only set the flag; the loop finishes the batch in hand."""
        self.stopping.set()

    def _connect(self) -> None:
        self.conn = amqp.connect(self.url, self.name, self.heartbeat, vhost=self.vhost)
        self.node = amqp.address(self.conn)  # for the heartbeat: the health page shows it
        self._open_channel()
        self.generation += 1
        # Batch ids are this connection's token and a sequence number: in ack order, so
        # that one id read from a ledger settles every batch of that connection up to it.
        self.conn_token, self.seq = uuid.uuid4().hex[:24], 0
        self.drainer_id = f"{self.name} {self.ledger.token} {self.conn_token}"
        self.consumers = {}
        self.gathered.reset()
        log.info(
            "connected",
            extra={
                "broker": amqp.describe(self.url),
                "node": amqp.node_of(self.conn),
                "vhost": self.vhost,
                "ledger": self.ledger.name,
                "compiled": compiled.describe(),  # the hot path's speed (setup.py)
            },
        )
        # Before consuming: restored before any redelivery is stored.
        self._declare_ledger()
        self.ledger.settle_doubts(self.conn)
        self._settle_foreign_ledgers()
        self.queues.forget()  # asked on the connection before: listed anew just below
        self._resolve()
        self.last_activity = time.monotonic()  # quiet time counts from here, not from start-up

    def _open_channel(self) -> None:
        self.channel = self.conn.channel()
        self.channel.basic_qos(prefetch_count=self.prefetch)
        self.channel.tx_select()  # acks and ledger notes take effect together (_acked)
        self.channel.add_on_cancel_callback(self._on_cancel)

    def _declare_ledger(self) -> None:
        """Declare the ledger, on the node this connection is on.

        One on a node this drainer has left (a failover) is read first, if that node answers
        within seconds (AckLedger.reach), then left for a fresh one here (AckLedger.move);
        one the broker refuses, or does not answer about in time, is replaced by a fresh one
        (AckLedger.renew): waiting for the node it lived on would stop draining this vhost
        for as long as it is down (on 4.0, about 67 s even then, and a SIGTERM meanwhile
        would go unanswered)."""
        ledger = self.ledger
        if ledger.home and ledger.home != self.node:
            try:
                if ledger.doubts:
                    ledger.reach(self.conn)
                    ledger.settle_doubts(self.conn)
                ledger.move()
            except (*amqp.ChannelErrors, amqp.NoAnswer) as e:
                ledger.renew(e)
        try:
            ledger.declare(self.channel, self.node)
        except amqp.ChannelErrors as e:  # the broker closed the channel
            ledger.renew(e)
            self._open_channel()
            ledger.declare(self.channel, self.node)
        self.drainer_id = f"{self.name} {ledger.token} {self.conn_token}"

    def _settle_foreign_ledgers(self) -> None:
        """The ledgers of dead drainers that the writer found at start-up (settle_foreign)."""
        self.ledger.settle_foreign(self.conn, self.foreign_ledgers)
        self.foreign_ledgers = []

    def _lost(self, error: Exception) -> None:
        """The connection or channel failed: what is unacked will be redelivered."""
        self.generation += 1  # the writer drops batches of the old channel it has not begun
        self.node = ""
        self.writer.wake(self)
        self.ledger.lost(silent=amqp.went_silent(error))
        self.unacked.clear()
        self.gathered.reset()
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
            if self.ledger.doubts:
                log.warning(
                    "stopped before reading the ack ledger; if the broker dropped acks with"
                    " the connection, those batches are stored twice",
                    extra={"batches": ",".join(pk for pk, _ in self.ledger.doubts)},
                )
            return 0
        try:
            if self.gathered.deliveries:
                self._flush()
            deadline = time.monotonic() + 60
            # Until the writer has settled the last forget too: with the ledger deleted and
            # the connection closed, a batch left pending could no longer be settled.
            while (
                self.unacked or self._outstanding() or self._in_flight()
            ) and time.monotonic() < deadline:
                self.conn.process_data_events(time_limit=0.05)
            self.channel.queue_delete(self.ledger.name)  # a clean close settles every ack
            self.conn.close()
        except amqp.AllErrors as e:
            self.generation += 1  # the writer must not wait for acks that cannot come
            self.writer.wake(self)
            # No ledger to read any more: if the broker dropped the last acks, those batches
            # are stored twice.
            log.warning(
                "connection lost while stopping",
                extra={
                    "error": repr(e),
                    "last_acked": ",".join(pk for pk, _ in list(self.ledger.sent)[-2:]),
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
