"""The drainer's heartbeat: a row per drainer process saying it is alive and what it does.

The drainer's writer thread calls `batch_stored` after each committed batch and `tick`
when idle (dlq/drain/writer.py). Rows are written at most every WRITE_EVERY_S, so the heartbeat
costs the drain almost nothing, and a failed write never touches the drain: the counts
stay in memory for the next try. The overview shows the rows (`overview_context`, the
fragment templates/_drainers.html); a drainer whose row goes stale without a clean stop
alerts (`stale_drainers`, dlq/tasks/health.py).
"""

import logging
import os
import socket
import time
from collections import Counter
from collections.abc import Callable

from django.db import DatabaseError, transaction
from django.db import connection as db
from django.db.models import F
from django.utils import timezone

from dlq.models.health import DrainCounter, DrainerHeartbeat

log = logging.getLogger("dlq.heartbeat")

WRITE_EVERY_S = 1.0  # after a batch: the overview's "last batch 3 s ago" stays true
IDLE_EVERY_S = 5.0  # when idle: well within the staleness threshold
# Batch write latency buckets (seconds), as in the Prometheus histogram on /metrics.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class Heartbeat:
    """Owned by the drainer's writer thread; not thread-safe, and needs not be."""

    def __init__(self, name: str, node: Callable[[], str] = str):
        self.name = name
        self.node = node  # the broker node(s) the drainer is connected to now: "host:port,..."
        self.host, self.pid = socket.gethostname(), os.getpid()
        self.started_at = timezone.now()
        self.queues = 0
        self.pending: Counter[tuple[str, str]] = Counter()  # drained, not yet counted
        self.stored = self.batches = 0
        self.latency = [0] * (len(LATENCY_BUCKETS) + 1)  # per bucket, the last is +Inf
        self.latency_sum = 0.0
        self.last_batch_at = None
        self.written_at = 0.0

    def batch_stored(self, rows: list[dict], new: int, seconds: float, queues: int) -> None:
        """After a batch is committed: count it, and report if the last report is old."""
        self.pending.update((row["vhost"], row["queue"]) for row in rows)
        self.stored += new
        self.batches += 1
        self.latency[_bucket(seconds)] += 1
        self.latency_sum += seconds
        self.last_batch_at = timezone.now()
        self.queues = queues
        if time.monotonic() - self.written_at >= WRITE_EVERY_S:
            self.write()

    def tick(self, queues: int) -> None:
        """From the writer's idle path: flush pending counts, show we are alive."""
        self.queues = queues
        due = WRITE_EVERY_S if self.pending else IDLE_EVERY_S
        if time.monotonic() - self.written_at >= due:
            self.write()

    def stopped(self) -> None:
        """A clean stop: the row says so, and no "stopped reporting" alert follows."""
        self.write(stopped=True)

    def write(self, stopped: bool = False) -> bool:
        self.written_at = time.monotonic()
        try:
            with transaction.atomic():
                self._save_row(stopped)
                self._count_drained()
        except DatabaseError as e:
            db.close()  # the writer's own connection; the drain reconnects as usual
            log.warning("could not write the drainer heartbeat", extra={"error": str(e)})
            return False
        self.pending.clear()
        return True

    def _save_row(self, stopped: bool) -> None:
        now = timezone.now()
        cumulative, total = {}, 0
        for bound, count in zip((*LATENCY_BUCKETS, "+Inf"), self.latency, strict=True):
            total += count
            cumulative[str(bound)] = total
        DrainerHeartbeat.objects.update_or_create(
            name=self.name,
            defaults={
                "host": self.host,
                "pid": self.pid,
                "started_at": self.started_at,
                "last_seen_at": now,
                "last_batch_at": self.last_batch_at,
                "stopped_at": now if stopped else None,
                "queues": self.queues,
                "node": self.node()[:255],
                "stored": self.stored,
                "batches": self.batches,
                "latency_buckets": cumulative,
                "latency_sum": self.latency_sum,
                "alerted_at": None,  # reporting again: a later silence alerts again
            },
        )

    def _count_drained(self) -> None:
        for (vhost, queue), n in sorted(self.pending.items()):
            counter, _ = DrainCounter.objects.get_or_create(vhost=vhost, queue=queue)
            DrainCounter.objects.filter(pk=counter.pk).update(total=F("total") + n)


def _bucket(seconds: float) -> int:
    for i, bound in enumerate(LATENCY_BUCKETS):
        if seconds <= bound:
            return i
    return len(LATENCY_BUCKETS)


# --- reading the heartbeats ---------------------------------------------------------------
