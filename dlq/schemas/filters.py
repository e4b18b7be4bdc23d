"""Query strings in: the message list's filters (also a bulk job's `filter`) and the audit
log's, validated once here for the API and the pages alike."""

import re
from datetime import UTC, datetime
from typing import Annotated, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ninja import Field
from pydantic import AfterValidator, BaseModel, BeforeValidator, model_validator

from dlq.messages import traces
from dlq.messages.queries import MAX_LIMIT, decode_cursor
from dlq.models import AuditAction, Status

MAX_ID = 2**63 - 1
STATUSES = [s.value for s in Status]
StatusName = Literal[tuple(STATUSES)]


# How the pages write a time ("2025-05-01 17:30:00 UTC+05:30", templatetags/dlq_time.py and
# static/dlq/localtime.js): a zone after the time, UTC or GMT with an offset or none.
NAMED_OFFSET = re.compile(
    r"(?P<at>.+?)\s*(?:UTC|GMT)\s*(?:(?P<sign>[+-])(?P<h>\d{1,2})(?::?(?P<m>\d\d))?)?", re.I
)
SPACED_OFFSET = re.compile(r"(?P<at>.+\d)\s+(?P<offset>[+-]\d\d(?::?\d\d)?|Z)", re.I)


def _as_iso(value: str) -> str:
    value = value.strip().replace("\u2212", "-")  # a typographic minus, as some zones print
    named = NAMED_OFFSET.fullmatch(value)
    if named:
        sign, hours, minutes = named["sign"] or "+", int(named["h"] or 0), named["m"] or "00"
        return f"{named['at']}{sign}{hours:02d}:{minutes}"
    spaced = SPACED_OFFSET.fullmatch(value)
    return f"{spaced['at']}{spaced['offset']}" if spaced else value


def parse_datetime(value: str) -> datetime:
    """ISO 8601, or a time as the pages show it (`2025-05-01 17:30:00 UTC+05:30`); without
    an offset it stays naive, for ZonedQuery to place in the zone the query names."""
    try:
        parsed = datetime.fromisoformat(_as_iso(value))
    except (TypeError, ValueError):
        raise ValueError(
            "must be an ISO 8601 date-time such as 2025-05-01T12:00:00Z, or a time as the"
            " console shows it: 2025-05-01 17:30:00 UTC+05:30 (in a query string, + is %2B)"
        ) from None
    return parsed if parsed.tzinfo is None else in_utc(parsed)


def in_utc(value: datetime) -> datetime:
    # In UTC, so PostgreSQL never sees an offset it refuses (it accepts up to 15:59).
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("is out of range (years 1 to 9999)") from None


def _zone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError("must be an IANA time zone such as Europe/Berlin") from None
    return value


def storable(value: str | None) -> str | None:
    """Text the database can keep: PostgreSQL refuses NUL, UTF-8 refuses lone surrogates."""
    if value is None:
        return value
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text") from None
    return value


def _date_time(value):
    return parse_datetime(value) if isinstance(value, str) else value


def _trace_id(value: str) -> str:
    """As stored: lower-case; a W3C, B3, Jaeger or Sentry trace id (traces.py) is 16 or 32
    hex digits, never all zeros."""
    value = value.strip().lower()
    if not traces.valid(value):
        raise ValueError("must be a trace id: 16 or 32 hexadecimal digits, not all zeros")
    return value


def _cursor(value: str) -> str:
    if decode_cursor(value) is None:
        raise ValueError("not a cursor this API gave out")
    return value


Text = Annotated[str, AfterValidator(storable)]
Vhost = Annotated[str, Field(max_length=255), AfterValidator(storable)]  # as the column
DateTime = Annotated[datetime, BeforeValidator(_date_time)]
Cursor = Annotated[str, AfterValidator(_cursor)]
TraceId = Annotated[str, Field(max_length=100), AfterValidator(_trace_id)]
Zone = Annotated[str, Field(max_length=64), AfterValidator(_zone)]
MessageId = Annotated[int, Field(ge=1, le=MAX_ID)]


class Query(BaseModel):
    """A query string: a blank parameter is an absent one (a form's empty field)."""

    @model_validator(mode="before")
    @classmethod
    def _blank_is_absent(cls, data):
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v not in ("", None)}
        return data


class ZonedQuery(Query):
    """A query whose times may come without an offset: they are in `tz` (the pages send the
    browser's zone, and say so beside the fields), else in UTC."""

    tz: Zone | None = Field(
        None, description="IANA time zone of the times given without an offset (default UTC)"
    )

    @model_validator(mode="after")
    def _zoned(self):
        zone = ZoneInfo(self.tz) if self.tz else UTC
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, datetime) and value.tzinfo is None:
                setattr(self, name, in_utc(value.replace(tzinfo=zone)))
        return self


class MessageFilter(ZonedQuery):
    """The filters of the message list (a bulk job's `filter` takes the same keys)."""

    queue: Text | None = None
    status: StatusName | None = None
    reason: Text | None = Field(None, description="death reason, e.g. rejected, expired")
    exchange: Text | None = Field(None, description="the exchange or the original exchange")
    routing_key: Text | None = Field(None, description="the routing key or the original one")
    exception_type: Text | None = None
    message_type: Text | None = Field(None, description="the message type, exactly")
    vhost: Vhost | None = Field(
        None, description="the vhost it was drained from, exactly (`/` is the default vhost)"
    )
    group: Text | None = Field(None, description="failure fingerprint")
    trace_id: TraceId | None = Field(
        None, description="the trace it belongs to: 16 or 32 hex digits (any case)"
    )
    received_after: DateTime | None = Field(
        None,
        description="inclusive; ISO 8601, or as the pages show (2025-05-01 17:30:00 UTC+05:30)",
    )
    received_before: DateTime | None = Field(None, description="exclusive; as received_after")
    q: Annotated[str, Field(max_length=200), AfterValidator(storable)] | None = Field(
        None, description="text search: body and headers"
    )

    def given(self) -> dict:
        """The filters that are set, by name."""
        names = [name for name in MessageFilter.model_fields if name != "tz"]  # not a filter
        values = {name: getattr(self, name) for name in names}
        return {name: value for name, value in values.items() if value is not None}


class QueueQuery(Query):
    """The filters of the queue list."""

    vhost: Vhost | None = Field(
        None, description="only the queues of this vhost, exactly (`/` is the default vhost)"
    )


class MessageListQuery(MessageFilter):
    cursor: Cursor | None = Field(None, description="next_cursor of the previous page (opaque)")
    limit: int = Field(50, ge=1, le=MAX_LIMIT)


class AuditQuery(ZonedQuery):
    cursor: Cursor | None = Field(None, description="next_cursor of the previous page (opaque)")
    limit: int = Field(50, ge=1, le=MAX_LIMIT)
    actor: Annotated[str, Field(max_length=150), AfterValidator(storable)] | None = Field(
        None, description="the actor's user name"
    )
    action: Literal[tuple(AuditAction.values)] | None = None
    message: MessageId | None = Field(None, description="rows naming this message id")
    job: MessageId | None = Field(None, description="rows of this job")
    after: DateTime | None = Field(None, description="at or after (ISO 8601, or as the pages show)")
    before: DateTime | None = Field(None, description="before (ISO 8601, or as the pages show)")
    format: Literal["json", "csv"] = Field(
        "json", description="csv: every matching row (cursor and limit ignored), as a download"
    )

    def filters(self) -> dict:
        names = ("actor", "action", "message", "job", "after", "before")
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}
