"""The ack ledger: a queue of each drainer naming the last batch whose ack the broker took.

The drainer sends each batch's ack and a note naming the batch to its ledger in one AMQP
transaction (Drainer._acked, which says why). After a connection the broker closed, the
ledger says which acks took effect and which did not (AckLedger.settle_doubts); a ledger
that a drainer which died left behind settles the batches it left pending
(AckLedger.settle_foreign).
"""

import logging
import re
import time
import uuid
from collections import deque
from collections.abc import Callable

from dlq.broker import amqp
from dlq.drain.handoff import ForgetUpto, Restore, WorkItem

log = logging.getLogger("dlq.drain")
LEDGER_PREFIX = "dlq-drain-acks."
# A ledger left behind by a crash goes away by itself after this long unused; until then
# a restarted drainer can settle the dead one's batches with it (AckLedger.settle_foreign).
LEDGER_EXPIRES_S = 3600
_TOKEN = re.compile(r"[0-9a-f]{32}")
LEDGER_ARGUMENTS = {"x-max-length": 1, "x-expires": LEDGER_EXPIRES_S * 1000}
# A ledger on a node the drainer has left, whose declare the broker has not answered after
# this long, is taken as refused (AckLedger.reach). A declare is answered in milliseconds,
# but about a classic queue whose node is down 3.10 refuses at once and 4.0 answers only
# after about 67 s.
LEDGER_ANSWER_S = 5.0


class AckLedger:
    """This drainer's ledger, kept by the main thread. The ledger is a queue of this drainer
    that keeps the id of the last batch whose ack the broker processed; `sent` holds the
    batches acked on the current connection; `doubts` those acked on a connection that was
    then lost, until the ledger is read. What that settles goes to the writer (`put`)."""

    def __init__(self, put: Callable[[WorkItem], None]):
        self.put = put  # the drainer's counting put, to the writer thread
        self.token = uuid.uuid4().hex
        self.name = f"{LEDGER_PREFIX}{self.token}"
        # (batch id, drainer) pairs, not batches: the deliveries must not outlive the ack.
        self.sent: deque[tuple[str, str]] = deque(maxlen=8)
        # The batch whose commit is out and not answered yet (the last of `sent`), and
        # whether its ack went to a quorum queue (committing, answered).
        self.unanswered: str | None = None
        self.unanswered_quorum = False
        self.doubts: list[tuple[str, str]] = []
        self.answered_doubts = 0  # the first ones of `doubts`: their commits were answered
        self.late_quorum_ack = False  # see lost()
        self.lost_at = 0.0
        # host:port of the node the ledger was declared through, and lives on ("": none yet)
        self.home = ""

    def declare(self, channel, node: str) -> None:
        """Declare the ledger (again) through `node`, the drainer's channel's node; a new
        ledger, a classic queue, lives there (the broker's default placement)."""
        channel.queue_declare(self.name, durable=True, arguments=LEDGER_ARGUMENTS)
        self.home = self.home or node

    def reach(self, conn) -> None:
        """Whether the ledger, on a node the drainer has left, can be read: raises as a
        refused declare does, or amqp.NoAnswer after LEDGER_ANSWER_S (its node is down, or
        hung). The drainer's connection is never left waiting (amqp.declare_within)."""
        amqp.declare_within(conn, self.name, LEDGER_ARGUMENTS, LEDGER_ANSWER_S)

    def move(self) -> None:
        """A fresh ledger on the node the drainer is on now, the doubts settled against the
        old one: with the two on one node, a node that dies takes the connection with it, and
        the drainer never waits for a ledger on a node it has left (Lifecycle._declare_ledger).
        The old one expires unused (LEDGER_EXPIRES_S)."""
        self.token = uuid.uuid4().hex
        self.name = f"{LEDGER_PREFIX}{self.token}"
        self.home = ""

    def renew(self, error: Exception) -> None:
        """The broker refuses this ledger, or does not answer about it in time (a classic
        queue lives on one node: with that node down, 3.10 says "home node is down", 4.0 says
        nothing for about 67 s): a fresh one from now on. Acks in doubt can no longer be
        settled against the old one: a batch whose commit went unanswered stays pending,
        whether its ack counted or not."""
        log.warning(
            "the ack ledger is unusable, starting a new one; if the broker dropped acks with"
            " the last connection, those batches are stored twice",
            extra={
                "ledger": self.name,
                "error": repr(error),
                "batches": ",".join(pk for pk, _ in self.doubts),
            },
        )
        self.doubts = []
        self.move()

    def committing(self, batch_id: str, drainer: str, quorum: bool) -> None:
        """The batch's ack and note are out, its commit is about to be: in doubt from now."""
        self.sent.append((batch_id, drainer))
        self.unanswered, self.unanswered_quorum = batch_id, quorum

    def answered(self) -> None:
        """The broker answered the commit: the channel has applied the ack and the note."""
        self.unanswered = None

    def lost(self, silent: bool = False) -> None:
        """The connection is gone: the acks sent on it are in doubt. `silent`: the node
        stopped answering (missed heartbeats), hung or cut off, not closed.

        A commit the broker answered took effect, whatever the ledger holds now. A commit
        left unanswered took effect if the ledger names its batch, with one exception: a
        silent node may be hung, and process the commit when it comes back, long after
        this drainer gave up on it. The note then lands in the ledger, but an ack to a
        quorum queue is not applied by the commit: the channel sends it on to the queue's
        leader as a Raft command, and a node that hung while it led the queue has lost the
        leadership meanwhile; the command is turned away, and the channel, closing as the
        connection is gone, does not live to send it to the new leader, which gives the
        messages back when it sees the channel down. The ledger would name a batch whose
        messages come back: forgotten, they are stored twice (2 of 3 hangs of a leader
        node did so). So such a batch stays pending (settle_doubts)."""
        if self.sent:
            self.doubts = list(self.sent)  # settled against the ledger once reconnected
            unanswered = self.unanswered is not None and self.unanswered == self.sent[-1][0]
            self.answered_doubts = len(self.doubts) - unanswered
            self.late_quorum_ack = silent and unanswered and self.unanswered_quorum
            self.sent.clear()
            self.lost_at = time.monotonic()
        self.unanswered = None

    def settle_doubts(self, conn) -> None:
        """After a lost connection: which of its acks took effect? (see Drainer._acked)"""
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
        last = read_ledger(conn, self.name)
        ids = [pk for pk, _ in self.doubts]
        # The ledger names the last batch whose transaction the broker committed: its ack
        # and every earlier one took effect, every later one did not. A ledger naming none
        # of them (empty, or an earlier batch): none of these acks took effect.
        counted = ids.index(last) + 1 if last in ids else 0
        # An answered commit took effect even if the ledger lost its note (purged, or a
        # queue of the same name declared anew): making its batch pending again would
        # take twins of its messages for copies.
        counted = max(counted, self.answered_doubts)
        kept = []
        if counted > self.answered_doubts and self.late_quorum_ack:
            kept = self.doubts[self.answered_doubts : counted]  # see lost()
            counted = self.answered_doubts
        dropped = self.doubts[counted + len(kept) :]
        last = ids[counted - 1] if counted else None
        doubts, self.doubts, self.answered_doubts, self.late_quorum_ack = self.doubts, [], 0, False
        if counted:
            # A commit whose answer the connection took with it left its batch pending.
            self.put(ForgetUpto(last))
        if kept:
            log.warning(
                "an ack to a quorum queue was unanswered when the node went silent; the"
                " ledger cannot tell whether the queue applied it, so its batch stays pending",
                extra={"batches": ",".join(pk for pk, _ in kept)},
            )
        if dropped:
            log.warning(
                "the broker dropped acks with the connection; their batches are pending again",
                extra={"batches": ",".join(pk for pk, _ in dropped)},
            )
        if kept or dropped:
            self.put(Restore(doubts[counted:]))

    def settle_foreign(self, conn, ledgers: list[str]) -> None:
        """At start-up: the pending batches that drainers which died left behind.

        A crash in the microseconds between an ack and the COMMIT of its batch's forgetting
        (pending.PreparedForget) leaves an acked batch pending, and twins of its messages
        among the redeliveries would be taken for copies of it. The dead drainer's ledger
        names its last ack that counted: every batch of that connection up to it is
        forgotten, before this drainer stores anything.
        """
        for name in ledgers:
            last = read_ledger(conn, name)
            if last is not None:
                self.put(ForgetUpto(last))


def read_ledger(conn, name: str) -> str | None:
    """The batch id in a ledger, left there for others (None: empty or gone).

    On a channel of its own: the drainer's channel is transactional, and a nack there
    would wait for the next commit."""
    probe = conn.channel()
    try:
        method, _, body = probe.basic_get(name, auto_ack=False)
    except amqp.ChannelErrors:
        return None  # expired or deleted: nothing to learn there
    if method:
        probe.basic_nack(method.delivery_tag, requeue=True)
    if probe.is_open:
        probe.close()
    return body.decode(errors="replace") if method else None


def foreign_ledgers(drainers: list[str], own_tokens: set[str]) -> list[str]:
    """The ledgers of the drainers named (as their pending batches name them), but those of
    this process's live drainers."""
    tokens = {part for d in drainers for part in d.split() if _TOKEN.fullmatch(part)}
    return [f"{LEDGER_PREFIX}{t}" for t in sorted(tokens - own_tokens)]
