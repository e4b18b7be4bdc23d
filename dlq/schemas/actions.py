"""The API's shapes for what operators do to one message: edit, replay, discard, restore,
and the replay targets and reasons that bulk jobs take too."""

from typing import Annotated, Literal

from ninja import Field, Schema
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    ValidationError,
    WrapValidator,
)

from dlq.actions.errors import ActionError
from dlq.models.actions import Outcome
from dlq.schemas.errors import error_message
from dlq.schemas.filters import storable
from dlq.schemas.values import TYPED_JSON, PropertiesIn, TypedValue, checked_headers


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
        problems = [f"{'.'.join(map(str, err['loc']))}: {error_message(err)}" for err in e.errors()]
        raise ValueError("; ".join(problems)) from None


Target = Annotated[
    Literal["original", "failed_queue"] | CustomTarget,
    WrapValidator(_one_target),
    Field(description=TARGET_DOC),
]


def target_value(target) -> str | dict:
    return target.model_dump() if isinstance(target, CustomTarget) else target


# --- single-message actions ---------------------------------------------------------------


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


ALLOW_DRAINED_DOC = (
    "replay even when the route reaches a queue the console itself drains (DLQ_QUEUES): the"
    " console would take the message straight back out, a loop; without it such a replay is"
    " refused (400 on target, naming the queue). Audited as allow_drained"
)


class ReplayIn(Schema):
    target: Target = "original"
    reason: Reason
    allow_drained: bool = Field(False, description=ALLOW_DRAINED_DOC)


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
    drained: list[str] = Field(
        description="queues of the route that the console drains itself: a replay there is"
        " refused without allow_drained"
    )
    note: str | None = Field(
        None, description="what the framework that failed the message means for the route"
    )
    replay_target: str | None = Field(
        None,
        description='the queue pattern of the replay override "original" follows; null for none',
    )


# --- jobs ---------------------------------------------------------------------------------


# --- the audit trail ----------------------------------------------------------------------
