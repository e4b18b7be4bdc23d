"""The API's shapes of the audit trail: one row per operator action, and a page of them."""

import json
from datetime import datetime
from typing import Any

from ninja import Field, Schema


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
