"""What crosses between a drainer's main thread and the writer thread, and who touches what.

Threads: D, a drainer's main thread (it owns the AMQP connection; one per vhost under
dlq/drain/estate.py); W, the writer thread (dlq/drain/writer.py; one per process, shared by
an estate's drainers); E, the estate's thread and the signal handlers. What is not listed
here is D's alone on a drainer, W's alone on the writer.

D -> W: work items on the writer's `work` queue, put only by the drainer's counting put
(Drainer._put: it names the drainer as the item's `owner` and counts it in `put_items`):
`Batch`, `NoteQueues`, `FindLedgers`, `ForgetUpto`, `Restore`. `STOP` (no owner) is put
by Writer.finish, on D for a drainer with a writer of its own, else on E.

What W touches on a drainer, the `Owner` of an item: it reads `generation` (D's, bumped on
connecting, on a loss, on letting go) before storing a batch, before each retry and while
it waits for an ack; reads `vhost`; calls `post_ack`, which reads D's `conn` and hands the
ack to pika's thread-safe callback; and writes `tally`, its only writer (D and E read it).
Through the callables it was made with, W also reads D's `ledger.token`, `consumers` and `node`.

What D touches on the writer: `work.unfinished_tasks` (is it busy?), `in_flight` (W's:
the batch acked last whose forget is not settled), `wake(owner)`; D or E calls `finish`.

A batch after the hand-off: W sets `forget` before post_ack, D reads it in _acked; D sets
`acked`, then `done`; W reads `acked` only once `done` is set. `wake` (D, E) sets `done`
too, and so does W when post_ack is refused. The prepared forget's database connection is
W's, but between post_ack and `done`, when only D uses it, to send the COMMIT.
A `FindLedgers`: W sets `ledgers`, then `answered`; D reads `ledgers` once it is answered.

The order around one batch (tests/drain/test_crash.py and test_outage.py prove it):
  W: commit rows and pending record (store.store_batch), `tally.stored` += new; settle the
     batch before (wait for its `done`, read its forget's outcome); prepare this one's
     forget (BEGIN; DELETE); `awaiting`, `in_flight`; post_ack; heartbeat; `tally.done` += 1.
  D (Drainer._acked, a pika callback): `unacked` minus it; a stale generation or a closed
     channel sends no ack; else basic_ack with the ledger note, `ledger.committing`,
     tx_commit, `ledger.answered`,
     the forget's COMMIT sent; `acked`; `done` (always, last).
  W (at its next item, or idle): `done`; the forget's outcome (or forget now, or later);
     `in_flight` = None (Lifecycle._shutdown waits for it).
"""

import threading
from dataclasses import dataclass, field
from typing import Protocol

from dlq.drain import pending
from dlq.messages.ingest import Delivery


@dataclass(slots=True)
class Tally:
    """A drainer's counts kept by the writer thread, their only writer."""

    done: int = 0  # the drainer's items the writer has finished (Drainer._outstanding)
    stored: int = 0  # new rows


class Owner(Protocol):
    """What the writer thread may touch on the drainer a work item is for: nothing else."""

    @property
    def vhost(self) -> str: ...

    @property
    def generation(self) -> int:
        """The drainer's channel's: a batch of an older one is neither stored nor acked."""

    @property
    def tally(self) -> Tally: ...

    def post_ack(self, batch: "Batch") -> bool:
        """Have the drainer's thread ack a committed batch; False: no ack can come."""


@dataclass(slots=True, eq=False)  # hashed by identity (Writer.awaiting)
class WorkItem:
    """What a drainer hands the writer thread; `owner` None only for STOP."""

    owner: Owner | None = field(default=None, init=False, repr=False)


@dataclass(slots=True, eq=False)
class Batch(WorkItem):
    """Deliveries to store in one transaction, then ack (dlq/drain/batch.py gathers them)."""

    id: str
    generation: int
    drainer: str
    deliveries: list[Delivery]
    last_tag: int
    # Set by the main thread once it has decided: acked (sent to the broker) or not.
    done: threading.Event = field(default_factory=threading.Event)
    acked: bool = False
    forget: pending.PreparedForget | None = None


@dataclass(slots=True, eq=False)
class NoteQueues(WorkItem):
    """The queues the drainer matched, recorded before any message of theirs arrives."""

    queues: list[dict]


@dataclass(slots=True, eq=False)
class FindLedgers(WorkItem):
    """At start-up: the ledgers of drainers that died with batches pending (the writer
    answers in `ledgers`, then sets `answered`)."""

    answered: threading.Event = field(default_factory=threading.Event)
    ledgers: list[str] = field(default_factory=list)


@dataclass(slots=True, eq=False)
class ForgetUpto(WorkItem):
    """A ledger says this batch's ack counted: forget its connection's batches up to it."""

    last_acked: str


@dataclass(slots=True, eq=False)
class Restore(WorkItem):
    """(batch id, drainer) pairs whose acks the broker dropped: pending again."""

    batches: list[tuple[str, str]]


@dataclass(slots=True, eq=False)
class Stop(WorkItem):
    """The writer's last item (Writer.finish)."""


STOP = Stop()
