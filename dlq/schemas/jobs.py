"""The API's shapes of bulk jobs: a job to create (ids or a frozen filter) and its progress."""

import json
from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema
from pydantic import ConfigDict, model_validator

from dlq.actions.jobs import MAX_IDS
from dlq.models.actions import JobStatus
from dlq.schemas.actions import Reason, Target
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
