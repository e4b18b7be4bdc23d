"""Query strings in: the message list's filters (also a bulk job's `filter`) and the audit
log's, validated once here for the API and the pages alike."""

from datetime import UTC, datetime
from typing import Annotated, Literal

from ninja import Field
from pydantic import AfterValidator, BaseModel, BeforeValidator, model_validator

from dlq.messages.queries import MAX_LIMIT, decode_cursor
from dlq.models import AuditAction, Status

MAX_ID = 2**63 - 1
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


def _cursor(value: str) -> str:
    if decode_cursor(value) is None:
        raise ValueError("not a cursor this API gave out")
    return value


Text = Annotated[str, AfterValidator(storable)]
Vhost = Annotated[str, Field(max_length=255), AfterValidator(storable)]  # as the column
DateTime = Annotated[datetime, BeforeValidator(_date_time)]
Cursor = Annotated[str, AfterValidator(_cursor)]
MessageId = Annotated[int, Field(ge=1, le=MAX_ID)]


class Query(BaseModel):
    """A query string: a blank parameter is an absent one (a form's empty field)."""

    @model_validator(mode="before")
    @classmethod
    def _blank_is_absent(cls, data):
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v not in ("", None)}
        return data


class MessageFilter(Query):
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
    received_after: DateTime | None = Field(None, description="ISO 8601, inclusive")
    received_before: DateTime | None = Field(None, description="ISO 8601, exclusive")
    q: Annotated[str, Field(max_length=200), AfterValidator(storable)] | None = Field(
        None, description="text search: body and headers"
    )

    def given(self) -> dict:
        """The filters that are set, by name."""
        values = {name: getattr(self, name) for name in MessageFilter.model_fields}
        return {name: value for name, value in values.items() if value is not None}


class QueueQuery(Query):
    """The filters of the queue list."""

    vhost: Vhost | None = Field(
        None, description="only the queues of this vhost, exactly (`/` is the default vhost)"
    )


class MessageListQuery(MessageFilter):
    cursor: Cursor | None = Field(None, description="next_cursor of the previous page (opaque)")
    limit: int = Field(50, ge=1, le=MAX_LIMIT)


class AuditQuery(Query):
    cursor: Cursor | None = Field(None, description="next_cursor of the previous page (opaque)")
    limit: int = Field(50, ge=1, le=MAX_LIMIT)
    actor: Annotated[str, Field(max_length=150), AfterValidator(storable)] | None = Field(
        None, description="the actor's user name"
    )
    action: Literal[tuple(AuditAction.values)] | None = None
    message: MessageId | None = Field(None, description="rows naming this message id")
    job: MessageId | None = Field(None, description="rows of this job")
    after: DateTime | None = Field(None, description="at or after (ISO 8601)")
    before: DateTime | None = Field(None, description="before (ISO 8601)")
    format: Literal["json", "csv"] = Field(
        "json", description="csv: every matching row (cursor and limit ignored), as a download"
    )

    def filters(self) -> dict:
        names = ("actor", "action", "message", "job", "after", "before")
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}
