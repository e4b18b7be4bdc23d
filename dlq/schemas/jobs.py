"""The API's shapes of bulk jobs: a job to create (ids or a frozen filter) and its progress."""

import json
from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema
from pydantic import ConfigDict, model_validator

from dlq.jobs.control import MAX_IDS, SAFETY, safety
from dlq.models.actions import JobStatus
from dlq.schemas.actions import ALLOW_DRAINED_DOC, Reason, Target
from dlq.schemas.filters import MessageFilter, MessageId


class JobFilter(MessageFilter):
    """A bulk job's filter. Unlike the list's query string, a key it does not know and a
    blank value are refused, not dropped: dropped, they widen the selection (a misspelt
    `queues`, an unset shell variable), to every parked message at worst, and a replay of
    those cannot be taken back. At least one filter: `{"status": "parked"}` says "all"."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _blank_is_absent(cls, data):  # replaces Query's: a blank value is an error here
        if not isinstance(data, dict):
            return data
        blank = sorted(k for k, v in data.items() if isinstance(v, str) and not v.strip())
        if blank:
            raise ValueError(f"blank filter {', '.join(blank)}: give a value or leave it out")
        return {k: v for k, v in data.items() if v is not None}  # null: not given

    @model_validator(mode="after")
    def _narrows(self):
        if not self.given():
            raise ValueError('give at least one filter ({"status": "parked"} selects every'
                             " parked message)")  # fmt: skip
        return self


class JobIn(Schema):
    action: Literal["replay", "discard"]
    ids: list[MessageId] | None = Field(
        None, min_length=1, max_length=MAX_IDS, description="the messages (or give filter)"
    )
    filter: JobFilter | None = Field(
        None,
        description="the list's filters; frozen at creation: only parked messages received "
        "up to that instant",
    )
    target: Target = "original"
    rate_per_s: int | None = Field(None, ge=1, le=100_000, description="messages per second")
    reason: Reason
    allow_drained: bool = Field(False, description=ALLOW_DRAINED_DOC)
    canary: int | None = Field(
        None, ge=1, description="a replay: publish only this many first (null: all at once)"
    )
    ramp: float = Field(
        2.0, gt=1, le=1000, description="each later step publishes this many times the last"
    )
    watch_seconds: int = Field(
        30, ge=0, le=86_400, description="after each step, watch this long for returns"
    )
    max_returns: int | None = Field(
        None,
        ge=0,
        description="stop (aborted) once more replayed messages came back than this; "
        "default 0 with a canary, else null (no limit)",
    )
    require_consumers: bool | None = Field(
        None,
        description="before each step every queue the route reaches needs a consumer; "
        "default true for original and failed_queue, false for a custom target",
    )

    def safety(self, target) -> dict:
        """The safe-replay fields with the contract's defaults for those not sent (an
        explicit null max_returns is no limit; an absent one is 0 with a canary)."""
        given = {name: getattr(self, name) for name in SAFETY if name in self.model_fields_set}
        if given.get("require_consumers") is None:
            given.pop("require_consumers", None)
        if self.action != "replay":
            return {name: value for name, value in given.items() if value is not None}
        return safety(target, given)


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
    status_detail: str = Field(
        description="why a job waits (watching a step, a queue without a consumer, the broker"
        ' refusing messages), was aborted or failed, naming the queue or the count; "" otherwise'
    )
    canary: int | None
    ramp: float
    watch_seconds: int
    max_returns: int | None
    require_consumers: bool
    paused: bool = Field(
        description="waiting for its operator after a run of identical broker errors"
        " (status_detail names it): POST /jobs/{id}/resume or /cancel"
    )
    step: int = Field(description="the step in progress or last done; 0 before the first")
    returned: int = Field(description="how many of its replayed messages came back so far")
    created_by: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @staticmethod
    def resolve_filter(obj) -> dict | None:
        return json.loads(obj.filter_json) if obj.filter_json else None


class RetryIn(Schema):
    reason: Reason
    allow_drained: bool = Field(False, description=ALLOW_DRAINED_DOC)
