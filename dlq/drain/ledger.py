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
        self.doubts: list[tuple[str, str]] = []
        self.lost_at = 0.0

    def declare(self, channel) -> None:
        channel.queue_declare(self.name, durable=True, arguments=LEDGER_ARGUMENTS)

    def renew(self, error: Exception) -> None:
        """The broker refuses this ledger (a classic queue lives on one node: with that node
        down, "home node is down"): a fresh one from now on. Acks in doubt can no longer be
        settled against the old one."""
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
        self.token = uuid.uuid4().hex
        self.name = f"{LEDGER_PREFIX}{self.token}"

    def lost(self) -> None:
        """The connection is gone: the acks sent on it are in doubt."""
        if self.sent:
            self.doubts = list(self.sent)  # settled against the ledger once reconnected
            self.sent.clear()
            self.lost_at = time.monotonic()

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
        dropped = self.doubts[counted:]
        self.doubts = []
        if counted:
            # A commit whose answer the connection took with it left its batch pending.
            self.put(ForgetUpto(last))
        if dropped:
            log.warning(
                "the broker dropped acks with the connection; their batches are pending again",
                extra={"batches": ",".join(pk for pk, _ in dropped)},
            )
            self.put(Restore(dropped))

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
