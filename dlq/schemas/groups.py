"""The API's shapes of a failure group as a worklist row, its query, and a change to who is
on it (the group page's form validates through the same shape)."""

from datetime import UTC, datetime
from typing import Annotated, Literal
from zoneinfo import ZoneInfo

from ninja import Field, Schema
from pydantic import BeforeValidator, model_validator

from dlq.groups.worklist import MAX_LIMIT, STATES
from dlq.schemas.filters import DateTime, Query, Text, Vhost, Zone, in_utc

State = Literal[STATES]


class GroupQueue(Schema):
    vhost: str
    queue: str


class GroupOut(Schema):
    id: str = Field(description="the group's fingerprint")
    name: str = Field(description="message type · exception type: first line of its message")
    message_type: str
    exception_type: str
    exception_message: str = Field(description="the first line of the newest message's")
    queues: list[GroupQueue]
    parked: int
    first_seen: datetime | None
    last_seen: datetime | None
    state: State = Field(
        description="derived: resolved (nothing parked), on_hold (hold_until in the future),"
        " investigating (an owner), else new"
    )
    owner: str | None = Field(description="a user's name")
    note: str
    ticket_url: str
    hold_until: datetime | None
    policy: int | None = Field(description="the redrive policy that applies (none yet)")


class GroupPage(Schema):
    results: list[GroupOut]
    count: int = Field(description="groups matching the filters")
    next_offset: int | None = Field(description="offset of the next page; null on the last")


class GroupListQuery(Query):
    vhost: Vhost | None = None
    queue: Text | None = Field(None, max_length=255)
    state: State | None = None
    owner: Text | None = Field(None, max_length=150, description="a user's name")
    limit: int = Field(50, ge=1, le=MAX_LIMIT)
    offset: int = Field(0, ge=0, le=10_000_000)


def _blank_is_null(value):
    return None if value == "" else value


class GroupChangeIn(Schema):
    """Any of owner, note, ticket_url, hold_until; the fields left out stay as they are."""

    owner: Text | None = Field(None, max_length=150, description="a user's name, or null")
    note: Text | None = Field(None, description="at most 10,000 characters")
    ticket_url: Text | None = Field(None, description='an http(s) URL, or ""')
    hold_until: Annotated[DateTime | None, BeforeValidator(_blank_is_null)] = Field(
        None, description="a future time, or null to lift the hold"
    )
    tz: Zone | None = Field(None, description="IANA zone of a hold_until without an offset")
    reason: Text = Field(description="why, for the audit trail")

    @model_validator(mode="after")
    def _zoned(self):
        if self.hold_until is not None and self.hold_until.tzinfo is None:
            zone = ZoneInfo(self.tz) if self.tz else UTC
            self.hold_until = in_utc(self.hold_until.replace(tzinfo=zone))
        return self

    def changes(self) -> dict:
        return self.model_dump(include={"owner", "note", "ticket_url", "hold_until"},
                               exclude_unset=True)  # fmt: skip
