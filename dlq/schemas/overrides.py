"""The API's shape of a per-queue replay override (at /api/v1/replay-targets, its path
since before the name settled)."""

from datetime import datetime

from ninja import Field, Schema

from dlq.schemas.filters import Text


class OverrideOut(Schema):
    id: int
    queue_pattern: str = Field(
        description="QUEUE (in the default vhost) or VHOST/QUEUE, each part a name or a glob"
        " (fnmatch; a / in a vhost name is written %2F); the first match wins"
    )
    exchange: str = Field(
        description='where "original" replays go, in the message\'s own vhost'
        ' ("" = the default exchange)'
    )
    routing_key: str
    created_at: datetime


class OverrideList(Schema):
    results: list[OverrideOut]


class OverrideIn(Schema):
    queue_pattern: Text
    exchange: Text = ""
    routing_key: Text = ""
    reason: Text = Field(description="why, for the audit trail")
