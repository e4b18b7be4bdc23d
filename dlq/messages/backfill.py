"""Deriving again, for messages stored by an earlier version, what this version derives on
arrival: the message type (0.4.0 reads the AMQP `type` property too), the first death's
time (from the entry `x-first-death-*` names), the failed queue and reason past a retry
queue's TTL expiry (0.5.0), and so the failure group (with its vhost since 0.5.0).

In batches by id, each its own transaction: safe to stop and to run again. An edited message
is derived from the version the drainer stored, as on arrival.
"""

import json
import logging
from collections.abc import Callable

from django.db import transaction

from dlq.messages import deaths
from dlq.messages.ingest import clean
from dlq.models import Message, MessageVersion

log = logging.getLogger("dlq.backfill")
BATCH = 1000
FIELDS = ("message_type", "first_death_at", "group", "failed_queue", "death_reason")


def derive(headers: dict, properties: dict, vhost: str) -> dict:
    death = deaths.read(headers, amqp_type=properties.get("type"))
    return {
        "message_type": clean(death.message_type),
        "first_death_at": death.first_death_at,
        "group": death.group(vhost),
        "failed_queue": clean(death.failed_queue),
        "death_reason": clean(death.reason, 32),
    }


def run(batch: int = BATCH, progress: Callable[[int, int, int], None] | None = None) -> int:
    """Every stored message, oldest first; returns how many rows changed."""
    total, seen, changed, last = Message.objects.count(), 0, 0, 0
    while True:
        with transaction.atomic():
            rows = list(
                Message.objects.filter(id__gt=last)
                .order_by("id")
                .only("id", "vhost", "headers_json", "properties_json", *FIELDS)[:batch]
            )
            if not rows:
                return changed
            changed += _update(rows)
        seen, last = seen + len(rows), rows[-1].id
        if progress:
            progress(seen, total, changed)


def _update(rows: list[Message]) -> int:
    originals = _first_versions([m.id for m in rows])
    dirty = []
    for m in rows:
        headers_json, properties_json = originals.get(m.id, (m.headers_json, m.properties_json))
        try:
            fresh = derive(json.loads(headers_json), json.loads(properties_json), m.vhost)
        except Exception:  # noqa: BLE001 - as the drainer's fallback row: keep what is stored
            log.warning("backfill_skipped", extra={"message_id": m.id}, exc_info=True)
            continue
        if any(getattr(m, name) != value for name, value in fresh.items()):
            for name, value in fresh.items():
                setattr(m, name, value)
            dirty.append(m)
    Message.objects.bulk_update(dirty, FIELDS)
    return len(dirty)


def _first_versions(ids: list[int]) -> dict[int, tuple[str, str]]:
    """The headers and properties each edited message arrived with (its version 1)."""
    found = MessageVersion.objects.filter(message_id__in=ids, number=1)
    return {v.message_id: (v.headers_json, v.properties_json) for v in found}
