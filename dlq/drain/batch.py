"""What the drainer stores at once: the deliveries gathered on the main thread into the batch
handed to the writer thread (dlq/drain/handoff.py), and the rows made of it.
"""

import contextlib
import logging

from dlq.drain.handoff import Batch
from dlq.messages.ingest import Delivery, build_row, fallback_row, legacy_fingerprint

log = logging.getLogger("dlq.drain")


class Gathering:
    """The deliveries of the next batch, as they arrive; the main thread's only."""

    def __init__(self, max_count: int, max_bytes: int):
        self.max_count, self.max_bytes = max_count, max_bytes
        self.reset()

    def reset(self) -> None:
        """Start empty (and drop what was gathered: unacked, the broker keeps it)."""
        self.deliveries: list[Delivery] = []
        self.size = 0
        self.started = 0.0
        self.last_tag = 0

    def due(self, now: float, wait_s: float) -> bool:
        """Something gathered has waited `wait_s` for the batch to fill."""
        return bool(self.deliveries) and now - self.started >= wait_s

    def add(self, delivery: Delivery, delivery_tag: int, now: float) -> bool:
        """Gather one delivery; True once the batch is full (by count or by bytes)."""
        deliveries = self.deliveries
        if not deliveries:
            self.started = now
        deliveries.append(delivery)
        self.size += len(delivery.body)
        self.last_tag = delivery_tag
        return len(deliveries) >= self.max_count or self.size >= self.max_bytes

    def take(self, batch_id: str, generation: int, drainer: str) -> Batch:
        """What is gathered, as a batch for the writer; gathering starts again."""
        batch = Batch(batch_id, generation, drainer, self.deliveries, self.last_tag)
        self.reset()
        return batch


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
