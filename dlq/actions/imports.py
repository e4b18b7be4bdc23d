"""Importing exported messages (contract: "Export and import"): each stored as a new
`parked` message with its bytes, typed headers and properties as exported, the derived
fields derived as the drainer derives them (ingest.build_row), all in one transaction with
one `import` audit row, or nothing at all.

The lines come checked from dlq/schemas/transfer.py, one at a time: a bad line raises
ActionError inside the transaction, which rolls back whatever was stored before it.
"""

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import SimpleNamespace

from django.db import transaction

from dlq import audit
from dlq.actions.errors import ActionError
from dlq.broker.properties import PROPERTY_NAMES
from dlq.messages.ingest import Delivery, build_row, fit
from dlq.models import DrainedQueue, Message
from dlq.models.actions import AuditAction

CHUNK = 500  # rows inserted per statement


@dataclass(slots=True)
class Imported:
    """One checked line: what it stores, and the id it had in the console it came from."""

    source_id: int | None
    vhost: str
    queue: str
    exchange: str
    routing_key: str
    body: bytes
    properties: dict  # as the detail gives them (properties_to_json)
    headers: dict  # typed, with the names as stored (schemas.values.stored_names)
    replay_count: int | None = None
    line: int = field(default=0)


@dataclass
class ImportResult:
    ids: array  # the new ids, in the order of the lines
    source_ids: list  # the exported ids (None where a line had none), in the same order
    audit_id: int


def store(items: Iterable[Imported], actor, source: str, target: dict,
          request_id: str = "") -> ImportResult:  # fmt: skip
    """Every item as a new parked message, or none (ActionError from `items` rolls back)."""
    quorum = set(DrainedQueue.objects.filter(queue_type="quorum").values_list("vhost", "name"))
    ids, source_ids = array("q"), []
    with transaction.atomic():
        batch = []
        for item in items:
            batch.append(_message(item, (item.vhost, item.queue) in quorum))
            source_ids.append(item.source_id)
            if len(batch) == CHUNK:
                ids.extend(_insert(batch))
                batch = []
        ids.extend(_insert(batch))
        if not ids:
            raise ActionError({"__all__": ["no messages to import: every line is blank"]})
        entry = audit.record(
            actor, AuditAction.IMPORT, message_ids=ids.tolist(), request_id=request_id,
            detail={"count": len(ids), "source": source, **target, "source_ids": source_ids},
        )  # fmt: skip
    return ImportResult(ids, source_ids, entry.pk)


def _message(item: Imported, quorum: bool) -> Message:
    """The row as the drainer would store this delivery, minus what ties it to this
    console's past: an exported dlq-origin-id names a message of the other console."""
    props = SimpleNamespace(**{n: item.properties.get(n) for n in PROPERTY_NAMES})
    props.headers = item.headers
    delivery = Delivery(item.queue, item.vhost, item.exchange, item.routing_key, False, props,
                        item.body, quorum)  # fmt: skip
    row = build_row(delivery, datetime.now(UTC))
    row.update(previous_id=None, lineage_id=None)
    if item.replay_count is not None:  # counted by the console it left, not by its headers
        row["replay_count"] = fit(item.replay_count)
    return Message(**row)


def _insert(batch: list[Message]) -> list[int]:
    return [m.pk for m in Message.objects.bulk_create(batch)] if batch else []
