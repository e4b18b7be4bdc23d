"""The API's shape of a per-queue replay target."""

from datetime import datetime

from ninja import Field, Schema

from dlq.schemas.filters import Text


class TargetOut(Schema):
    id: int
    queue_pattern: str = Field(description="a queue name or glob (fnmatch); the first match wins")
    exchange: str = Field(description='where "original" replays go ("" = the default exchange)')
    routing_key: str
    created_at: datetime


class TargetList(Schema):
    results: list[TargetOut]


class TargetIn(Schema):
    queue_pattern: Text
    exchange: Text = ""
    routing_key: Text = ""
    reason: Text = Field(description="why, for the audit trail")
