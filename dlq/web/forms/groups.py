"""The groups pages' input, validated by the API's own models (schemas.groups): the
worklist's query string, and the group page's form for who is on a group."""

from pydantic import ValidationError

from dlq.schemas.errors import pydantic_errors
from dlq.schemas.groups import GroupChangeIn, GroupListQuery

FORM_FIELDS = ("owner", "note", "ticket_url", "hold_until", "tz", "reason")
TAKE_REASON = "taking it"  # "Take it" with no reason typed: what the audit row says


def parse_worklist(query) -> tuple[GroupListQuery | None, dict[str, list[str]]]:
    """The worklist's filters, validated exactly like GET /api/v1/groups."""
    try:
        return GroupListQuery.model_validate({k: query.get(k) for k in query}), {}
    except ValidationError as e:
        return None, pydantic_errors(e)


def parse_change(form, me: str) -> tuple[GroupChangeIn | None, dict[str, list[str]]]:
    """The group page's form, as PATCH /api/v1/groups/{id} takes it: every field is given
    (an emptied one clears it); "Take it" makes `me` the owner."""
    data = {name: form.get(name, "") for name in FORM_FIELDS}
    data["owner"] = me if form.get("take") else data["owner"] or None
    data["tz"] = data["tz"] or None
    if form.get("take") and not data["reason"].strip():
        data["reason"] = TAKE_REASON
    try:
        return GroupChangeIn.model_validate(data), {}
    except ValidationError as e:
        return None, pydantic_errors(e)
