"""Which queues the drainer drains: its patterns (names and globs) against the queues of its
vhost, as the management API lists them or, without it, as literal names are found."""

import fnmatch
import logging

from dlq.broker import amqp, mgmt
from dlq.drain.ledger import LEDGER_PREFIX

log = logging.getLogger("dlq.drain")


def is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


class Discovery:
    """The main thread's: what the patterns match, and the names reported missing."""

    def __init__(self, patterns: list[str], vhost: str):
        self.patterns, self.vhost = patterns, vhost
        self.reported_missing: set[str] = set()

    def listed(self, conn) -> list[dict]:
        """The queues of the vhost that a drainer may drain (no exclusive ones, no ledgers)."""
        try:
            listed = mgmt.list_queues(self.vhost)
        except mgmt.ManagementError as e:
            log.warning("queue discovery failed, keeping current queues", extra={"error": str(e)})
            listed = self._probe_literals(conn)
        return [
            q for q in listed if not q.get("exclusive") and not q["name"].startswith(LEDGER_PREFIX)
        ]

    def matching(self, listed: list[dict]) -> list[dict]:
        """The queues listed that the patterns match; a missing name is reported once."""
        names = {q["name"] for q in listed}
        for pattern in self.patterns:
            if (
                not is_glob(pattern)
                and pattern not in names
                and pattern not in self.reported_missing
            ):
                log.warning("queue does not exist (yet)", extra={"queue": pattern})
                self.reported_missing.add(pattern)
        return [q for q in listed if any(fnmatch.fnmatchcase(q["name"], p) for p in self.patterns)]

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
