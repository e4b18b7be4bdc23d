"""Which queues the drainer drains: its patterns (names and globs) against the queues of its
vhost, as the management API lists them or, without it, as literal names are found."""

import fnmatch
import logging
import threading
from concurrent.futures import Future

from dlq.broker import amqp, mgmt, names
from dlq.drain.ledger import LEDGER_PREFIX

log = logging.getLogger("dlq.drain")


def is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


class Discovery:
    """The main thread's: what the patterns match, and the names reported missing.

    The management API is asked in a thread of its own while the drainer runs (ask,
    answered): the main thread sends this drainer's acks, and the writer, shared by every
    vhost's drainer, waits for the last one before its next batch. A node slow to answer
    would otherwise hold every vhost's storing for its whole timeout, at each resolve."""

    def __init__(self, patterns: list[str], vhost: str):
        self.patterns, self.vhost = patterns, vhost
        self.reported_missing: set[str] = set()
        self.reported_down: set[str] = set()
        self.reported_unstorable: set[str] = set()
        self._asking: Future | None = None

    def listed(self, conn) -> list[dict]:
        """The queues of the vhost that a drainer may drain (no exclusive ones, no ledgers),
        asked and waited for: at connect, before consuming."""
        return self._drainable(self._queues(lambda: mgmt.list_queues(self.vhost), conn))

    def ask(self) -> None:
        """Have the management API asked for the vhost's queues, unless it is being asked.
        In a daemon thread: one that waits for a hung node never holds up an exit."""
        if self._asking is None:
            self._asking = Future()
            threading.Thread(
                target=_answer, args=(self._asking, self.vhost), name="dlq-discovery", daemon=True
            ).start()

    def answered(self, conn) -> list[dict] | None:
        """What listed() gives, once the question ask() put has its answer; None before."""
        if self._asking is None or not self._asking.done():
            return None
        asking, self._asking = self._asking, None
        return self._drainable(self._queues(asking.result, conn))

    def forget(self) -> None:
        """A question out is not answered any more (its answer, when it comes, is dropped):
        a queue was deleted since it was put, or the connection was replaced. Applied, the
        old answer would subscribe to the deleted queue, and the broker would close the
        channel for it; the next question is put afresh."""
        self._asking = None

    def _queues(self, management, conn) -> list[dict]:
        try:
            return management()
        except mgmt.ManagementError as e:
            log.warning("queue discovery failed, keeping current queues", extra={"error": str(e)})
            return self._probe_literals(conn)

    @staticmethod
    def _drainable(listed: list[dict]) -> list[dict]:
        return [
            q for q in listed if not q.get("exclusive") and not q["name"].startswith(LEDGER_PREFIX)
        ]

    def matching(self, listed: list[dict]) -> list[dict]:
        """The queues listed that the patterns match, but those whose node is down; a missing
        name, and a queue that is down, are reported once."""
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
        return [q for q in matched if not self._down(q) and not self._unstorable(q["name"])]

    def _unstorable(self, name: str) -> bool:
        """A name the database cannot hold: its batches could never be stored, and the
        writer, shared by every queue, would retry them for ever. Reported once."""
        why = names.unstorable(name)
        if why and name not in self.reported_unstorable:
            log.warning("queue not drained, its messages stay in the broker",
                        extra={"queue": ascii(name), "why": why})  # fmt: skip
            self.reported_unstorable.add(name)
        return bool(why)

    def _down(self, queue: dict) -> bool:
        """A classic queue whose node is down (the management API says "down"): a consume
        would close the channel, and with it every other queue's consumer (on 4.0 only after
        about 67 s). It is drained once its node is back; the others meanwhile."""
        if queue.get("state") != "down":
            self.reported_down.discard(queue["name"])
            return False
        if queue["name"] not in self.reported_down:
            log.warning(
                "queue unavailable, its node is down",
                extra={"queue": queue["name"], "node": queue.get("node", "")},
            )
            self.reported_down.add(queue["name"])
        return True

    def subscribed(self, name: str) -> None:
        """Consumed from now on: should it go missing again, it is reported again."""
        self.reported_missing.discard(name)

    def _probe_literals(self, conn) -> list[dict]:
        """Without the management API, literal queue names are checked one by one."""
        found = []
        for name in (p for p in self.patterns if not is_glob(p)):
            probe = conn.channel()
            try:
                probe.queue_declare(name, passive=True)
                found.append({"name": name})
            except amqp.ChannelErrors:
                continue  # the broker closed the probe channel: no such queue
            if probe.is_open:
                probe.close()
        return found


def _answer(question: Future, vhost: str) -> None:
    try:
        question.set_result(mgmt.list_queues(vhost))
    except BaseException as e:  # handed to the drainer's thread, which reads the answer
        question.set_exception(e)


def queues_empty(conn, names: list[str]) -> bool:
    """For --once: a quiet spell alone does not prove the queues empty (a loaded broker
    can pause longer than the quiet time); ask the broker for their ready counts."""
    probe = None
    for name in names:
        if probe is None or not probe.is_open:
            probe = conn.channel()
        try:
            if probe.queue_declare(name, passive=True).method.message_count:
                probe.close()
                return False
        except amqp.ChannelErrors:
            continue  # deleted meanwhile: nothing left to drain there
    if probe is not None and probe.is_open:
        probe.close()
    return True
