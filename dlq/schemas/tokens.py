"""The API's shape of an API token: what it is and when it was used, never the token."""

from datetime import datetime

from ninja import Schema


class TokenOut(Schema):
    id: int
    user: str
    name: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None


class TokenList(Schema):
    results: list[TokenOut]
