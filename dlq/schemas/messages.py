"""The API's shapes of stored messages and queues, as JSON out."""

import base64
import json
from datetime import datetime
from typing import Any

from ninja import Field, Schema

from dlq.messages import traces
from dlq.messages.deaths import x_death_entries
from dlq.messages.display import api_text
from dlq.redrive import matching
from dlq.schemas.policies import RedriveOut
from dlq.schemas.values import PROPERTIES_DOC, TypedValue, api_names


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
    message_type: str = Field(
        description="the message's type as its framework names it (Celery's task, Symfony's"
        " message class, MassTransit's or NServiceBus's message type, Spring's __TypeId__, the"
        " AMQP type property); empty when none"
    )
    group: str
    replay_count: int
    trace_id: str = Field(
        description="the trace it belongs to (W3C traceparent, B3, Jaeger uber-trace-id or"
        " sentry-trace header): 16 or 32 lower-case hex digits; empty when none"
    )
    trace_url: str = Field(
        description="DLQ_TRACE_URL with {trace_id} filled in; empty without either"
    )

    @staticmethod
    def resolve_trace_url(obj) -> str:
        return traces.link(obj.trace_id)


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


class VersionOut(Schema):
    at: datetime = Field(description="when the edit that replaced this version was made")
    actor: str = Field(description="who made that edit")
    reason: str = Field(description="the edit's reason")
    body_base64: str
    properties: dict[str, Any] = Field(description=PROPERTIES_DOC)
    headers: dict[str, TypedValue] = Field(description="AMQP headers, each a TypedValue")


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
    versions: list[VersionOut] = Field(
        description="the earlier versions of an edited message, oldest first, each as it was"
        " before that edit (the current version is the message itself)"
    )
    redrive: RedriveOut | None = Field(
        description="what the redrive policy that matches it will do; null when none does"
    )

    @staticmethod
    def resolve_redrive(obj) -> dict | None:
        return matching.state_of(obj)

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
    def resolve_headers(obj) -> dict:
        return api_names(obj.headers)

    @staticmethod
    def resolve_x_death(obj) -> list[dict]:
        return x_death_entries(obj.headers)

    @staticmethod
    def resolve_versions(obj) -> list[dict]:
        return [
            {
                "at": v.replaced_at,
                "actor": v.replaced_by,
                "reason": v.reason,
                "body_base64": base64.b64encode(bytes(v.body)).decode(),
                "properties": json.loads(v.properties_json),
                "headers": api_names(json.loads(v.headers_json)),
            }
            for v in obj.versions.order_by("number")
        ]


class ExportedMessage(MessageDetail):
    """One line of an export: the detail without `history` and `versions` (an export reads
    whole rows a chunk at a time, never a message's lineage nor its versions). `redrive`
    is looked up for a whole chunk at once (matching.states_of), and handed in."""

    history: list[HistoryEvent] = Field(default=[], exclude=True)
    versions: list[VersionOut] = Field(default=[], exclude=True)

    @staticmethod
    def resolve_redrive(obj) -> None:
        return None  # the caller's, for the chunk

    @staticmethod
    def resolve_history(obj) -> list[dict]:
        return []  # resolved, not looked up on the row: a failed lookup costs a tenth of a line

    @staticmethod
    def resolve_versions(obj) -> list[dict]:
        return []


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
