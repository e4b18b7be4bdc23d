"""Deriving again, for messages stored by an earlier version, what this version derives on
arrival: the message type (0.4.0 reads the AMQP `type` property too), the first death's
time (from the entry `x-first-death-*` names), the failed queue and reason past a retry
queue's TTL expiry (0.5.0), and so the failure group (with its vhost since 0.5.0); what
Symfony Messenger's stamps and PHP-serialized envelopes say (0.6.0: message type, exception,
retries, the queue where the handler failed and the route back to it); the type that
MassTransit's envelope (`messageType` in the body) and NServiceBus's enclosed message types
name without a failure's headers; the trace a message belongs to (0.12.0, traces.py).

In batches by id, each its own transaction: safe to stop and to run again. An edited message
is derived from the version the drainer stored, as on arrival.
"""

import json
import logging
from collections.abc import Callable

from django.db import transaction

from dlq.messages import symfony, traces
from dlq.messages.ingest import death_columns
from dlq.models import DrainedQueue, Message, MessageVersion

log = logging.getLogger("dlq.backfill")
BATCH = 1000
FIELDS = ("message_type", "first_death_at", "group", "failed_queue", "death_reason",
          "exception_type", "exception_message", "exception_stacktrace", "delivery_count",
          "original_exchange", "original_routing_keys_json", "original_routing_key",
          "trace_id")  # fmt: skip


def derive(headers: dict, properties: dict, m: Message, body: bytes, quorum: bool) -> dict:
    fresh = death_columns(headers, properties, m.vhost, m.routing_key, body, quorum)
    # The delivery count read again only where Symfony's stamps say it: elsewhere it may
    # hang on whether the parking queue was a quorum queue then, which no row records.
    if not symfony.read(headers, body):
        fresh["delivery_count"] = m.delivery_count
    fresh["trace_id"] = traces.trace_id(headers)
    return {name: fresh[name] for name in FIELDS}


def run(batch: int = BATCH, progress: Callable[[int, int, int], None] | None = None) -> int:
    """Every stored message, oldest first; returns how many rows changed."""
    total, seen, changed, last = Message.objects.count(), 0, 0, 0
    while True:
        with transaction.atomic():
            rows = list(
                Message.objects.filter(id__gt=last)
                .order_by("id")
                .only(
                    "id",
                    "vhost",
                    "queue",
                    "routing_key",
                    "body",
                    "headers_json",
                    "properties_json",
                    *FIELDS,
                )[:batch]  # fmt: skip
            )
            if not rows:
                return changed
            changed += _update(rows)
        seen, last = seen + len(rows), rows[-1].id
        if progress:
            progress(seen, total, changed)


def _update(rows: list[Message]) -> int:
    originals = _first_versions([m.id for m in rows])
    quorum = _quorum_queues(rows)
    dirty = []
    for m in rows:
        stored = (m.headers_json, m.properties_json, bytes(m.body))
        headers_json, properties_json, body = originals.get(m.id, stored)
        try:
            headers, properties = json.loads(headers_json), json.loads(properties_json)
            fresh = derive(headers, properties, m, body, (m.vhost, m.queue) in quorum)
        except Exception:  # noqa: BLE001 - as the drainer's fallback row: keep what is stored
            log.warning("backfill_skipped", extra={"message_id": m.id}, exc_info=True)
            continue
        if any(getattr(m, name) != value for name, value in fresh.items()):
            for name, value in fresh.items():
                setattr(m, name, value)
            dirty.append(m)
    Message.objects.bulk_update(dirty, FIELDS)
    return len(dirty)


def _first_versions(ids: list[int]) -> dict[int, tuple[str, str, bytes]]:
    """The headers, properties and body each edited message arrived with (its version 1)."""
    found = MessageVersion.objects.filter(message_id__in=ids, number=1)
    return {v.message_id: (v.headers_json, v.properties_json, bytes(v.body)) for v in found}


def _quorum_queues(rows: list[Message]) -> set[tuple[str, str]]:
    """The parking queues that are quorum queues: there x-delivery-count is the drainer's."""
    queues = DrainedQueue.objects.filter(queue_type="quorum")
    return set(queues.values_list("vhost", "name")) & {(m.vhost, m.queue) for m in rows}
