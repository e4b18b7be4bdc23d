"""The API's shapes: query strings in, JSON out, and the 400 body for bad input."""

import base64
from datetime import UTC, datetime
from typing import Any, Literal

from ninja import Field, Schema
from pydantic import BaseModel, ConfigDict, RootModel, field_validator, model_validator

from dlq.amqp import TYPE_NAMES
from dlq.bodyview import api_text
from dlq.deaths import x_death_entries
from dlq.models import Status
from dlq.queries import MAX_LIMIT, decode_cursor

TYPED_VALUE_DOC = """An AMQP field value in typed JSON, so every wire type survives a round trip.

`type` is one of the AMQP table types; the value is in `value`, or in `base64` for raw bytes:

- `{"type": "longstr", "value": "text"}`; a long string that is not UTF-8:
  `{"type": "longstr", "base64": "..."}`
- `{"type": "bytes", "base64": "..."}` (byte array)
- `{"type": "bool", "value": true}`
- `{"type": "int8" | "uint8" | "int16" | "uint16" | "int32" | "uint32" | "int64", "value": 12}`
- `{"type": "float" | "double", "value": 1.75}`; non-finite values are the strings
  `"NaN"`, `"Infinity"`, `"-Infinity"`
- `{"type": "decimal", "value": "12.50"}` (a string, exact)
- `{"type": "timestamp", "value": 1700000000}` (whole seconds since 1970, UTC)
- `{"type": "array", "value": [TypedValue, ...]}`
- `{"type": "table", "value": {"name": TypedValue, ...}}`
- `{"type": "void", "value": null}`

Table keys that are not UTF-8 are kept with surrogate escapes."""


class TypedValue(RootModel[dict[str, Any]]):
    """A header value, passed through as stored; the class only names it in the schema."""

    model_config = ConfigDict(
        title="TypedValue",
        json_schema_extra={
            "description": TYPED_VALUE_DOC,
            "required": ["type"],
            "properties": {
                "type": {"type": "string", "enum": TYPE_NAMES},
                "value": {"description": "the value; its JSON type follows `type`"},
                "base64": {"type": "string", "description": "raw bytes, base64 (or value)"},
            },
        },
    )


PROPERTIES_DOC = (
    "The message's AMQP basic properties that are set, other than headers, as plain JSON: "
    "content_type, content_encoding, delivery_mode, priority, correlation_id, reply_to, "
    "expiration, message_id, timestamp (seconds since 1970), type, user_id, app_id, "
    'cluster_id. A short string that is not UTF-8 is given as {"base64": "..."}.'
)
STATUSES = [s.value for s in Status]
StatusName = Literal[tuple(STATUSES)]


def parse_datetime(value: str) -> datetime:
    """ISO 8601, strictly; a time without an offset is taken as UTC."""
    try:
        parsed = datetime.fromisoformat(value)
    except (TypeError, ValueError):
        raise ValueError(
            "must be an ISO 8601 date-time such as 2025-05-01T12:00:00Z"
            " (in a query string, write + as %2B)"
        ) from None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    # In UTC, so PostgreSQL never sees an offset it refuses (it accepts up to 15:59).
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise ValueError("is out of range (years 1 to 9999)") from None


class MessageFilter(BaseModel):
    """The filters of the message list (a bulk job's `filter` takes the same keys)."""

    queue: str | None = None
    status: StatusName | None = None
    reason: str | None = Field(None, description="death reason, e.g. rejected, expired")
    exchange: str | None = Field(None, description="the exchange or the original exchange")
    routing_key: str | None = Field(None, description="the routing key or the original one")
    exception_type: str | None = None
    group: str | None = Field(None, description="failure fingerprint")
    received_after: datetime | None = Field(None, description="ISO 8601, inclusive")
    received_before: datetime | None = Field(None, description="ISO 8601, exclusive")
    q: str | None = Field(None, max_length=200, description="text search: body and headers")

    @model_validator(mode="before")
    @classmethod
    def _blank_is_absent(cls, data):
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v not in ("", None)}
        return data

    @field_validator("queue", "reason", "exchange", "routing_key", "exception_type", "group", "q")
    @classmethod
    def _storable(cls, value):
        if value is not None and "\x00" in value:
            raise ValueError("must not contain NUL characters")
        return value

    @field_validator("received_after", "received_before", mode="before")
    @classmethod
    def _iso_8601(cls, value):
        return parse_datetime(value) if isinstance(value, str) else value

    def given(self) -> dict:
        """The filters that are set, by name."""
        values = {name: getattr(self, name) for name in MessageFilter.model_fields}
        return {name: value for name, value in values.items() if value is not None}


class MessageListQuery(MessageFilter):
    cursor: str | None = Field(None, description="next_cursor of the previous page (opaque)")
    limit: int = Field(50, ge=1, le=MAX_LIMIT)

    @field_validator("cursor")
    @classmethod
    def _valid_cursor(cls, value):
        if value is not None and decode_cursor(value) is None:
            raise ValueError("not a cursor this API gave out")
        return value


class MessageOut(Schema):
    id: int
    queue: str
    vhost: str
    status: str
    message_id: str
    correlation_id: str
    exchange: str
    routing_key: str
    original_exchange: str | None
    original_routing_keys: list[str]
    failed_queue: str
    death_reason: str
    death_count: int
    delivery_count: int | None
    first_death_at: datetime | None
    received_at: datetime
    size: int
    content_type: str
    content_encoding: str
    exception_type: str
    exception_message: str
    group: str
    replay_count: int


class XDeathOut(Schema):
    queue: str
    reason: str
    count: int
    time: datetime | None
    exchange: str
    routing_keys: list[str]
    original_expiration: str | None


class HistoryEvent(Schema):
    at: datetime
    event: str = Field(description="arrived, edited, discarded, restored or replayed")
    actor: str | None = Field(description="who did it; null for the broker")
    message: int = Field(description="id of the stored message the event belongs to")
    detail: dict[str, Any]


class MessageDetail(MessageOut):
    exception_stacktrace: str
    body_base64: str
    body_text: str | None = Field(
        description="the body when it is text (gzip decoded, at most 8 MiB of it)"
    )
    body_truncated: bool = Field(
        description="body_text is cut: the inflated gzip body is larger than 8 MiB"
    )
    properties: dict[str, Any] = Field(description=PROPERTIES_DOC)
    headers: dict[str, TypedValue] = Field(description="AMQP headers, each a TypedValue")
    x_death: list[XDeathOut] = Field(description="x-death entries, most recent first")
    history: list[HistoryEvent] = Field(description="the lineage's events, oldest first")

    @staticmethod
    def resolve_body_base64(obj) -> str:
        return base64.b64encode(bytes(obj.body)).decode()

    @staticmethod
    def resolve_body_text(obj) -> str | None:
        return _readable_body(obj)[0]

    @staticmethod
    def resolve_body_truncated(obj) -> bool:
        return _readable_body(obj)[1]

    @staticmethod
    def resolve_x_death(obj) -> list[dict]:
        return x_death_entries(obj.headers)


def _readable_body(message) -> tuple[str | None, bool]:
    """Inflated once per response, though two fields show it."""
    if not hasattr(message, "_readable_body"):
        message._readable_body = api_text(bytes(message.body), message.content_encoding)
    return message._readable_body


class MessagePage(Schema):
    results: list[MessageOut]
    next_cursor: str | None = Field(description="null on the last page")


class QueueOut(Schema):
    name: str
    vhost: str
    queue_type: str
    parked: int = Field(description="stored messages in status parked")
    depth: int | None = Field(description="messages on the broker; null when unknown")
    last_arrival_at: datetime | None


class QueueList(Schema):
    results: list[QueueOut]


class ErrorOut(Schema):
    detail: str


class InvalidInput(Schema):
    detail: str = "invalid input"
    errors: dict[str, list[str]]


def field_errors(errors: list[dict]) -> dict[str, list[str]]:
    """ninja's validation errors, as {field: [message, ...]}; nested fields are dotted."""
    out: dict[str, list[str]] = {}
    for error in errors:
        out.setdefault(_field(error["loc"]), []).append(_message(error))
    return out


def _field(loc: tuple) -> str:
    """("query", "limit") -> limit; ("body", "payload", "headers", "x") -> headers.x."""
    parts = list(loc[1:])
    if loc and loc[0] == "body" and len(parts) > 1:
        parts = parts[1:]  # the view's parameter name
    return ".".join(str(part) for part in parts) or "__all__"


def _message(error: dict) -> str:
    kind, ctx = error.get("type", ""), error.get("ctx") or {}
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    if kind == "less_than_equal":
        return f"must be at most {ctx['le']}"
    if kind == "greater_than_equal":
        return f"must be at least {ctx['ge']}"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return "must be a whole number"
    if kind == "string_too_long":
        return f"must be at most {ctx['max_length']} characters"
    if kind == "literal_error":
        return f"must be one of {ctx['expected']}"
    if kind == "missing":
        return "is required"
    return error["msg"]
