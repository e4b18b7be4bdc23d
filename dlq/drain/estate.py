"""Draining a whole estate: one drainer (dlq/drain/drainer.py) per vhost that DLQ_QUEUES names.

AMQP connections are per vhost, so each drained vhost gets a Drainer of its own, in a thread
of this process, with every guarantee of the single-vhost drainer on its own connection:
commit then ack, its ack ledger, dedup after a crash, a prefetch window per consumer. They
share one writer thread (dlq/drain/writer.py): one database connection pair and one
heartbeat row for the process whatever the number of vhosts, and batches that grow while the
writer is busy instead of many small transactions competing. A vhost whose connection fails
(permissions, deleted) backs off on its own and never stops the others. Vhosts are
re-resolved with the queues: a vhost created later is drained without a restart; one that is
gone (deleted, or no longer readable by the console's user) is let go cleanly, and its
stored messages stay.
"""

import logging
import os
import queue as queuelib
import socket
import threading

from django.conf import settings

from dlq.broker import amqp, mgmt, names
from dlq.drain.baton import Baton
from dlq.drain.drainer import Drainer
from dlq.drain.writer import Writer

log = logging.getLogger("dlq.drain")
ONCE_POLL_S = 0.2


class Estate:
    def __init__(self, patterns=None, once=False, broker_url=None, tune_threads=None, **tuning):
        """`tune_threads(n)`: called with the number of vhosts drained whenever it may have
        changed (the drain command sets the interpreter's switch interval with it)."""
        self.url = broker_url or settings.DLQ_BROKER_URL
        self.default_vhost = amqp.vhost_of(self.url)
        self.patterns = names.parse_all(patterns or settings.DLQ_QUEUES, self.default_vhost)
        self.once = once
        self.tuning = tuning  # batch_size, prefetch, flush_ms: as Drainer takes them
        self.stopping = threading.Event()
        self.drainers: dict[str, tuple[Drainer, threading.Thread]] = {}
        self.codes: dict[str, int] = {}
        self.known_vhosts: list[str] | None = None  # as last listed by the management API
        self.reported_unstorable: set[str] = set()
        self.tune_threads = tune_threads or (lambda vhosts: None)
        self.baton = Baton()
        self.writer = Writer(
            queuelib.Queue(),
            f"dlq-drain {socket.gethostname()} pid {os.getpid()}",
            ledger_tokens=lambda: {d.ledger.token for d, _ in list(self.drainers.values())},
            queue_count=lambda: sum(len(d.consumers) for d, _ in list(self.drainers.values())),
            node=lambda: ",".join(sorted({d.node for d, _ in list(self.drainers.values())} - {""})),
        )

    @property
    def stored(self) -> int:
        return sum(d.stored for d, _ in self.drainers.values())

    def run(self) -> int:
        """Drain until stopped (or, with once, until every vhost's queues are empty)."""
        writer = threading.Thread(target=self.writer.loop, name="dlq-writer", daemon=True)
        writer.start()
        try:
            while not self.stopping.is_set():
                self._resolve()
                if self.once and not self._running():
                    break
                self.stopping.wait(ONCE_POLL_S if self.once else settings.DLQ_RESOLVE_SECONDS)
        finally:
            self._stop_all()
            self.writer.finish()
            writer.join(timeout=5)
        return max(self.codes.values(), default=0)

    def stop(self, *_signal_args) -> None:
        """Signal handler: every drainer finishes the batch in hand."""
        self.stopping.set()
        for drainer, _ in list(self.drainers.values()):
            drainer.stop()

    def vhosts(self) -> list[str]:
        """The vhosts the patterns name: literal ones always, globs against the vhosts the
        management API lists (kept as last listed while it is unreachable)."""
        wanted = {p.vhost for p in self.patterns if not names.is_glob(p.vhost)}
        globs = [p for p in self.patterns if names.is_glob(p.vhost)]
        if globs:
            try:
                self.known_vhosts = mgmt.list_vhosts()
            except mgmt.ManagementError as e:
                log.warning(
                    "vhost discovery failed, keeping current vhosts", extra={"error": str(e)}
                )
            for vhost in self.known_vhosts or list(self.drainers):
                if any(p.matches_vhost(vhost) for p in globs):
                    wanted.add(vhost)
        return sorted(v for v in wanted if not self._unstorable(v))

    def _unstorable(self, vhost: str) -> bool:
        """A vhost name the database cannot hold (dlq/drain/queues.py says why a queue's
        cannot be either): left out, reported once."""
        why = names.unstorable(vhost)
        if why and vhost not in self.reported_unstorable:
            log.warning("vhost not drained, its messages stay in the broker",
                        extra={"vhost": ascii(vhost), "why": why})  # fmt: skip
            self.reported_unstorable.add(vhost)
        return bool(why)

    def _patterns_in(self, vhost: str) -> list[str]:
        return [p.queue for p in self.patterns if p.matches_vhost(vhost)]

    def _resolve(self) -> None:
        wanted = self.vhosts()
        for vhost in wanted:
            if not self.once and vhost in self.drainers and not self.drainers[vhost][1].is_alive():
                log.warning("restarting the drainer of a vhost", extra={"vhost": vhost})
                del self.drainers[vhost]  # it failed (logged): a vhost is never left undrained
            if vhost not in self.drainers and not (self.once and vhost in self.codes):
                self._start(vhost)
        for vhost in [v for v in self.drainers if v not in wanted]:
            log.info("vhost is gone, no longer drained", extra={"vhost": vhost})
            self._stop(vhost)
        self.baton.shared = len(self.drainers) > 1
        self.tune_threads(len(self.drainers))

    def _start(self, vhost: str) -> None:
        drainer = Drainer(
            patterns=self._patterns_in(vhost),
            once=self.once,
            broker_url=self.url,
            vhost=vhost,
            writer=self.writer,
            baton=self.baton,
            **self.tuning,
        )
        thread = threading.Thread(
            target=self._run_one, args=(vhost, drainer), name=f"dlq-drain {vhost}", daemon=True
        )
        self.drainers[vhost] = (drainer, thread)
        if self.stopping.is_set():
            drainer.stop()
        thread.start()

    def _run_one(self, vhost: str, drainer: Drainer) -> None:
        try:
            code = drainer.run()
        except Exception:  # one vhost's failure must not take the others down
            log.exception("the drainer of a vhost failed", extra={"vhost": vhost})
            code = 1
        self.codes[vhost] = max(code, self.codes.get(vhost, 0))
        if code and not self.once and not drainer.stopping.is_set():
            log.error("the drainer of a vhost stopped", extra={"vhost": vhost, "code": code})

    def _running(self) -> bool:
        return any(thread.is_alive() for _, thread in self.drainers.values())

    def _stop(self, vhost: str) -> None:
        drainer, thread = self.drainers.pop(vhost)
        drainer.stop()
        thread.join(timeout=90)
        self.codes.pop(vhost, None)  # let go on purpose: no failure of the run

    def _stop_all(self) -> None:
        for drainer, _ in self.drainers.values():
            drainer.stop()
        for vhost, (_, thread) in list(self.drainers.items()):
            thread.join(timeout=90)
            if thread.is_alive():
                log.error("the drainer of a vhost did not stop in time", extra={"vhost": vhost})
                self.codes[vhost] = 1
