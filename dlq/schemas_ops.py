"""The API's shapes for what operators do: edit, replay, discard, restore, jobs, the audit."""

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Strict,
    ValidationError,
    WrapValidator,
    field_validator,
    model_validator,
)

from dlq.actions import ActionError
from dlq.amqp import MAX_NESTING, TYPE_NAMES, AmqpValueError, encode_table
from dlq.jobs import MAX_IDS
from dlq.ops_models import AuditAction, JobStatus, Outcome
from dlq.queries import MAX_LIMIT, decode_cursor
from dlq.schemas import MessageFilter, TypedValue, _message, parse_datetime

MAX_ID = 2**63 - 1
TYPED_JSON = (
    " Header values use the typed JSON encoding of the TypedValue schema (the same as the"
    " message detail), so every AMQP field type survives the round trip."
)


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


def _reason(value: str) -> str:
    if not value.strip():
        raise ValueError("a reason is required")
    return storable(value)


Reason = Annotated[
    str,
    Field(
        max_length=2000,
        description="why (required, not blank); kept in the audit trail",
        json_schema_extra={"pattern": r"\S"},  # documents "not blank"; _reason checks it
    ),
    AfterValidator(_reason),
]
ShortStr = Annotated[str, Field(max_length=255), AfterValidator(storable)]
MessageId = Annotated[int, Field(ge=1, le=MAX_ID)]


class CustomTarget(BaseModel):
    """An explicit destination: an exchange ("" is the default exchange) and a routing key."""

    model_config = ConfigDict(extra="forbid", title="CustomTarget")
    exchange: ShortStr
    routing_key: ShortStr


TARGET_DOC = (
    '"original" (the original exchange and routing key), "failed_queue" (the default exchange, '
    'routing key = the queue where the message died) or {"exchange": str, "routing_key": str}'
)


def _one_target(value, handler):
    """One message per bad target, under `target`, instead of one per member of the union."""
    try:
        return handler(value)
    except ValidationError as e:
        if not isinstance(value, dict):
            raise ValueError(
                'must be "original", "failed_queue" or {"exchange": str, "routing_key": str}'
            ) from None
        problems = [f"{'.'.join(map(str, err['loc']))}: {_message(err)}" for err in e.errors()]
        raise ValueError("; ".join(problems)) from None


Target = Annotated[
    Literal["original", "failed_queue"] | CustomTarget,
    WrapValidator(_one_target),
    Field(description=TARGET_DOC),
]


def target_value(target) -> str | dict:
    return target.model_dump() if isinstance(target, CustomTarget) else target


# --- single-message actions ---------------------------------------------------------------


class RawShortStr(BaseModel):
    """A short string property that is not UTF-8, as its bytes in base64."""

    model_config = ConfigDict(extra="forbid", title="RawShortStr")
    base64: str


def _one_short_string(value, handler):
    """One message per bad short string, instead of one per member of the union."""
    try:
        return handler(value)
    except ValidationError:
        raise ValueError(
            'must be a string of at most 255 bytes, {"base64": "..."} or null'
        ) from None


ShortProperty = Annotated[
    Annotated[str, Field(max_length=255)] | RawShortStr | None, WrapValidator(_one_short_string)
]
Octet = Annotated[int, Strict(), Field(ge=0, le=255)] | None


class PropertiesIn(BaseModel):
    """The AMQP basic properties other than headers, as the message detail gives them.

    Short strings are at most 255 bytes (UTF-8), or {"base64": ...} when not UTF-8;
    `timestamp` is whole seconds since 1970. Properties left out (or null) are not set."""

    model_config = ConfigDict(extra="forbid")
    content_type: ShortProperty = None
    content_encoding: ShortProperty = None
    delivery_mode: Octet = Field(None, description="2 is persistent")
    priority: Octet = None
    correlation_id: ShortProperty = None
    reply_to: ShortProperty = None
    expiration: ShortProperty = Field(None, description="not sent again on replay")
    message_id: ShortProperty = None
    timestamp: Annotated[int, Strict(), Field(ge=0, le=2**64 - 1)] | None = None
    type: ShortProperty = None
    user_id: ShortProperty = None
    app_id: ShortProperty = None
    cluster_id: ShortProperty = None

    def given(self) -> dict:
        return self.model_dump(exclude_none=True)


def _shape_problem(typed, path: str, depth: int = 0) -> str | None:
    """Where a typed header value does not have the typed JSON shape (its `type` a known type
    name, tables and arrays of typed values); the values themselves are the encoder's."""
    if depth > MAX_NESTING:
        return f"{path}: nested deeper than {MAX_NESTING}"
    if not isinstance(typed, dict) or typed.get("type") not in TYPE_NAMES:
        return f'{path}: needs {{"type": one of {", ".join(TYPE_NAMES)}, "value": ...}}'
    inner = typed.get("value")
    if typed["type"] == "table" and isinstance(inner, dict):
        items = [(f"{path}.{key}", value) for key, value in inner.items()]
    elif typed["type"] == "array" and isinstance(inner, list):
        items = [(f"{path}[{n}]", value) for n, value in enumerate(inner)]
    else:
        return None
    problems = (_shape_problem(value, where, depth + 1) for where, value in items)
    return next((problem for problem in problems if problem), None)


def checked_headers(headers: dict[str, TypedValue]) -> dict[str, dict]:
    """The headers as plain typed JSON, or ActionError naming each bad header.

    dlq.amqp's encoder expects the typed shape (a `type` that is a type name); anything else
    must not reach it (it raised TypeError, a 500, on {"type": {}})."""
    plain = {key: value.root for key, value in headers.items()}
    errors = {}
    for key, typed in plain.items():
        problem = _shape_problem(typed, f"headers.{key}")
        if problem is None:  # the encoder's own check, so every bad header is named at once
            try:
                encode_table({key: typed})
            except AmqpValueError as e:
                problem = str(e)
        if problem:
            errors[f"headers.{key}"] = [problem]
    if errors:
        raise ActionError(errors)
    return plain


class EditIn(Schema):
    reason: Reason
    body_text: str | None = Field(None, description="the new body as text (sent as UTF-8)")
    body_base64: str | None = Field(None, description="the new body as base64 bytes")
    headers: dict[str, TypedValue] | None = Field(
        None, description="all the headers the message is to have (replaces them)." + TYPED_JSON
    )
    properties: PropertiesIn | None = Field(
        None, description="all the properties the message is to have (replaces them)"
    )

    def changes(self) -> dict:
        headers = None if self.headers is None else checked_headers(self.headers)
        properties = None if self.properties is None else self.properties.given()
        return {"body_text": self.body_text, "body_base64": self.body_base64,
                "headers": headers, "properties": properties}  # fmt: skip


class ReplayIn(Schema):
    target: Target = "original"
    reason: Reason


class ReasonIn(Schema):
    reason: Reason


class ReplayOut(Schema):
    outcome: Literal[tuple(Outcome.values)] = Field(
        description="confirmed: the message is replayed; anything else leaves it parked"
    )
    detail: str = Field(description="the broker's answer, when it is not a plain confirm")
    replay_id: str = Field(description="the dlq-replay-id header the message carried")
    message: int = Field(description="id of the replayed message")


class RouteQuery(BaseModel):
    target: Literal["original", "failed_queue"] | None = Field(
        None, description="original (the default) or failed_queue; or exchange and routing_key"
    )
    exchange: ShortStr | None = Field(None, description="custom target: exchange")
    routing_key: ShortStr | None = Field(None, description="custom target: routing key")

    def chosen(self) -> str | dict:
        if self.exchange is None and self.routing_key is None:
            return self.target or "original"
        if self.target is not None:
            raise ActionError({"target": ["give target, or exchange and routing_key, not both"]})
        return {"exchange": self.exchange or "", "routing_key": self.routing_key or ""}


class RouteOut(Schema):
    target: str = Field(description="original, failed_queue or custom")
    exchange: str
    routing_key: str
    queues: list[str] | None = Field(description="bound queues now; null when unknown")
    warning: str | None = Field(description="unroutable, several copies, or route unknown")


# --- jobs ---------------------------------------------------------------------------------


class JobIn(Schema):
    action: Literal["replay", "discard"]
    ids: list[MessageId] | None = Field(
        None, min_length=1, max_length=MAX_IDS, description="the messages (or give filter)"
    )
    filter: MessageFilter | None = Field(
        None,
        description="the list's filters; frozen at creation: only parked messages received "
        "up to that instant",
    )
    target: Target = "original"
    rate_per_s: int | None = Field(None, ge=1, le=100_000, description="messages per second")
    reason: Reason


class JobOut(Schema):
    id: int
    action: str
    status: Literal[tuple(JobStatus.values)]
    total: int
    done: int
    failed: int
    outcomes: dict[str, int] = Field(description="{outcome: count}")
    target: str | dict[str, str] | None = Field(description="null for a discard")
    rate_per_s: int | None
    reason: str
    filter: dict[str, Any] | None = Field(description="the frozen filter; null for ids")
    cancel_requested: bool
    created_by: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @staticmethod
    def resolve_filter(obj) -> dict | None:
        return json.loads(obj.filter_json) if obj.filter_json else None


# --- the audit trail ----------------------------------------------------------------------


class AuditQuery(BaseModel):
    cursor: str | None = Field(None, description="next_cursor of the previous page (opaque)")
    limit: int = Field(50, ge=1, le=MAX_LIMIT)
    actor: str | None = Field(None, max_length=150, description="the actor's user name")
    action: Literal[tuple(AuditAction.values)] | None = None
    message: MessageId | None = Field(None, description="rows naming this message id")
    job: MessageId | None = Field(None, description="rows of this job")
    after: datetime | None = Field(None, description="at or after (ISO 8601)")
    before: datetime | None = Field(None, description="before (ISO 8601)")
    format: Literal["json", "csv"] = Field(
        "json", description="csv: every matching row (cursor and limit ignored), as a download"
    )

    @model_validator(mode="before")
    @classmethod
    def _blank_is_absent(cls, data):
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if v not in ("", None)}
        return data

    @field_validator("actor")
    @classmethod
    def _storable(cls, value):
        return storable(value)

    @field_validator("after", "before", mode="before")
    @classmethod
    def _iso_8601(cls, value):
        return parse_datetime(value) if isinstance(value, str) else value

    @field_validator("cursor")
    @classmethod
    def _valid_cursor(cls, value):
        if value is not None and decode_cursor(value) is None:
            raise ValueError("not a cursor this API gave out")
        return value

    def filters(self) -> dict:
        names = ("actor", "action", "message", "job", "after", "before")
        return {name: getattr(self, name) for name in names if getattr(self, name) is not None}


class AuditOut(Schema):
    id: int
    at: datetime
    actor: str = Field(description="the actor's name (a user, or a system actor)")
    actor_id: int | None = Field(description="the user's id; null for a system actor")
    action: str
    message_ids: list[int]
    job_id: int | None
    reason: str
    diff: dict[str, Any] | None = Field(description="edits: before and after, per field")
    detail: dict[str, Any] | None = Field(description="replays and jobs: what was done")
    request_id: str

    @staticmethod
    def resolve_actor(obj) -> str:
        return obj.actor_name

    @staticmethod
    def resolve_detail(obj) -> dict | None:
        if not obj.detail:
            return None
        try:
            value = json.loads(obj.detail)
        except ValueError:
            return {"text": obj.detail}
        return value if isinstance(value, dict) else {"value": value}


class AuditPage(Schema):
    results: list[AuditOut]
    next_cursor: str | None = Field(description="null on the last page")
