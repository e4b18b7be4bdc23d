"""The API's shape of an alert sent, with the lifecycle state of each group it named."""

from datetime import datetime
from typing import Literal

from ninja import Field, Schema

from dlq.alerts.lifecycle import MAX_LIMIT, STATES
from dlq.schemas.filters import Query


class AlertGroupOut(Schema):
    group: str = Field(description="the failure group's fingerprint")
    count: int = Field(description="its arrivals the alert counted")
    state: Literal[STATES] = Field(
        description="open; acknowledged (an owner: the Acknowledge button or the console);"
        " resolved (nothing of the group is parked)"
    )
    acknowledged_by: str | None = Field(description="the owner's user name")
    acknowledged_at: datetime | None


class AlertOut(Schema):
    id: int
    at: datetime = Field(description="when the channel took it")
    channel: str
    groups: list[AlertGroupOut]


class AlertPage(Schema):
    results: list[AlertOut]
    count: int
    next_offset: int | None


class AlertListQuery(Query):
    limit: int = Field(50, ge=1, le=MAX_LIMIT)
    offset: int = Field(0, ge=0, le=10_000_000)
