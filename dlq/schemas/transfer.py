"""Export and import (contract: "Export and import"): a message as one NDJSON line, the
message detail's fields without `history` and `versions`; and such a line read back, checked
field by field, into what dlq/actions/imports.py stores.

An export holds one chunk of rows at a time (queries.chunks); an import reads a line at a
time, so neither ever holds the whole selection or the whole file.
"""

import base64
import binascii
from collections.abc import Iterator
from datetime import datetime
from typing import Annotated

import orjson
from ninja.responses import NinjaJSONEncoder
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from dlq.actions import changes, imports
from dlq.actions.errors import ActionError
from dlq.actions.imports import Imported
from dlq.messages import queries
from dlq.redrive import matching
from dlq.schemas.errors import pydantic_errors
from dlq.schemas.filters import MAX_ID, Vhost, storable
from dlq.schemas.messages import ExportedMessage
from dlq.schemas.values import PropertiesIn, TypedValue, checked_headers

# A body larger than RabbitMQ 4's default max message size would not replay there (nor on a
# 3.x broker set so): refused on import, naming the line.
MAX_BODY_BYTES = 16 * 2**20
# A line: such a body in base64, with its text (up to 8 MiB, escaped) and the rest.
MAX_LINE_BYTES = 100 * 2**20
MAX_BAD_LINES = 10  # a bad import reports at most this many lines, then stops reading
_ENCODER = NinjaJSONEncoder()  # as the API renders the detail: the same text for each field

Name = Annotated[str, Field(max_length=255), AfterValidator(storable)]  # as the columns


# --- export -------------------------------------------------------------------------------


def export_line(message, redrive: dict | None = None) -> bytes:
    """One message as the API's detail gives it, less history and versions, on one line;
    `redrive` as matching.state_of gives it."""
    fields = ExportedMessage.model_validate(message).model_dump()
    fields["redrive"] = redrive
    return _ENCODER.encode(fields).encode() + b"\n"


def export_chunks(filters: dict) -> Iterator[tuple[int, bytes]]:
    """The messages the list's `filters` select, newest first: (how many, their lines) a
    chunk at a time, the chunk's redrive states in one query."""
    for rows in queries.chunks(queries.filter_messages(filters)):
        states = matching.states_of([m.pk for m in rows])
        yield len(rows), b"".join(export_line(m, states.get(m.pk)) for m in rows)


def filter_detail(filters: dict) -> dict:
    """The filters as an audit row keeps them (times in ISO 8601), as a job keeps its own."""
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in filters.items()}


# --- import -------------------------------------------------------------------------------


class ImportLine(BaseModel):
    """What an import reads of an exported line; the derived fields are derived again."""

    model_config = ConfigDict(extra="ignore")
    id: Annotated[int, Field(ge=1, le=MAX_ID)] | None = Field(
        None, description="the message's id in the console it was exported from"
    )
    vhost: Vhost | None = None
    queue: Name | None = None
    exchange: Name = ""
    routing_key: Name = ""
    replay_count: Annotated[int, Field(ge=0, le=2**31 - 1)] | None = None
    body_base64: str
    properties: PropertiesIn = PropertiesIn()
    headers: dict[str, TypedValue] = {}


class Target(BaseModel):
    """Where an import puts its messages instead of the vhost and queue of each line."""

    vhost: Vhost | None = None
    queue: Name | None = None


def target_of(vhost: str | None, queue: str | None) -> Target:
    try:
        return Target(vhost=vhost, queue=queue)
    except ValidationError as e:
        raise ActionError(pydantic_errors(e)) from None


def import_from(stream, actor, source: str, target: Target,
                request_id: str = "") -> imports.ImportResult:  # fmt: skip
    """The import: the API's and dlq_import's. `stream` gives bytes by readline()."""
    where = target.model_dump(exclude_none=True)
    return imports.store(read_lines(stream, target), actor, source, where, request_id)


def read_lines(stream, override: Target) -> Iterator[Imported]:
    """Each non-blank line of a binary stream as a message to store. A bad line does not
    stop the reading at once: the lines after it are checked too (up to MAX_BAD_LINES bad
    ones) and nothing more is yielded; then ActionError names every bad line and field,
    `line N.field` (`line N` for the line as a whole), for the importer to roll back."""
    errors: dict[str, list[str]] = {}
    bad = 0
    for number, raw in _lines(stream):
        try:
            item = _parsed(raw, override)
        except ActionError as e:
            for field, found in e.errors.items():
                errors[f"line {number}" if field == "__all__" else f"line {number}.{field}"] = found
            bad += 1
            if bad >= MAX_BAD_LINES or raw is None:
                break
            continue
        if not errors:
            item.line = number
            yield item
    if errors:
        raise ActionError(errors)


def _lines(stream) -> Iterator[tuple[int, bytes | None]]:
    """(line number, its bytes), blank lines skipped; None for a line too long to read (the
    last one read)."""
    number = 0
    while raw := stream.readline(MAX_LINE_BYTES + 1):
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            yield number, None
            return
        if raw.strip():
            yield number, raw


def _parsed(raw: bytes | None, override: Target) -> Imported:
    if raw is None:
        raise ActionError({"__all__": [f"is longer than {MAX_LINE_BYTES} bytes"]})
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise ActionError({"__all__": [f"is not JSON: {e}"]}) from None
    if not isinstance(data, dict):
        raise ActionError({"__all__": ["must be a JSON object (one message)"]})
    try:
        line = ImportLine.model_validate(data)
    except ValidationError as e:
        raise ActionError(pydantic_errors(e)) from None
    vhost, queue = override.vhost or line.vhost, override.queue or line.queue
    missing = {name: ["is required"] for name, v in (("vhost", vhost), ("queue", queue)) if not v}
    if missing:
        raise ActionError(missing)
    properties = line.properties.given()
    changes.validated_properties(properties, properties)  # as sent: the broker took them
    return Imported(
        source_id=line.id, vhost=vhost, queue=queue, exchange=line.exchange,
        routing_key=line.routing_key, body=_body(line.body_base64), properties=properties,
        headers=checked_headers(line.headers), replay_count=line.replay_count,
    )  # fmt: skip


def _body(text: str) -> bytes:
    try:
        body = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ActionError({"body_base64": ["is not valid base64"]}) from None
    if len(body) > MAX_BODY_BYTES:
        raise ActionError({"body_base64": [f"is {len(body)} bytes; at most {MAX_BODY_BYTES}"]})
    return body
