"""The API's shapes of a redrive policy (contract: "Redrive policies")."""

from datetime import datetime
from typing import Literal

from ninja import Field, Schema
from pydantic import ConfigDict

from dlq.schemas.filters import Text


class PolicyMatch(Schema):
    """Exact values of any of these; at least one."""

    model_config = ConfigDict(extra="forbid")

    vhost: Text | None = None
    queue: Text | None = None
    group: Text | None = None
    message_type: Text | None = None
    exception_type: Text | None = None
    reason: Text | None = Field(None, description="the death reason, e.g. rejected, expired")


class PolicyIn(Schema):
    name: Text = Field(max_length=150)
    enabled: bool = True
    match: PolicyMatch
    target: Literal["original", "failed_queue"]
    delay_seconds: int = Field(ge=1, description="the first redrive this long after the arrival")
    backoff: float = Field(2.0, ge=1, description="each later attempt waits this many times longer")
    max_attempts: int = Field(ge=1)
    rate_per_s: float | None = Field(None, gt=0)
    require_consumers: bool = True
    trip_returns: int = Field(10, ge=1)
    trip_window_seconds: int = Field(300, ge=1)
    reason: Text = Field("", description="why, for the audit trail")

    def values(self) -> dict:
        values = self.dict(exclude={"reason"})
        values["match"] = self.match.dict(exclude_none=True)
        return values


class PolicyOut(Schema):
    id: int
    name: str
    enabled: bool
    match: dict[str, str]
    target: str
    delay_seconds: int
    backoff: float
    max_attempts: int
    rate_per_s: float | None
    require_consumers: bool
    trip_returns: int
    trip_window_seconds: int
    state: Literal["active", "tripped", "disabled"]
    waiting: str = Field(
        description="why its due messages are held back now (a queue without a consumer, a"
        ' vhost the console cannot open), "" when nothing holds them; cleared by its next'
        " replay"
    )
    waiting_since: datetime | None = Field(description="since when `waiting` says so")


class PolicyList(Schema):
    results: list[PolicyOut]


class RedriveOut(Schema):
    policy: int
    attempt: int = Field(description="the policy's redrives along the message's lineage")
    next_at: datetime | None
    exhausted: bool
