"""/api/v1/messages: reading stored messages and the actions on one message.

Views are thin: reading goes through dlq/messages/queries.py, every change through
dlq/actions/message.py (which checks the status, writes the audit row and talks to the
broker).
"""

from django.http import Http404
from ninja import Field, Query, Router, Schema

from dlq import audit, http
from dlq.accounts.roles import ADMIN, OPERATOR
from dlq.actions import message as message_actions
from dlq.actions import replay, routes
from dlq.actions.errors import ActionError
from dlq.api.base import ACTION_ERRORS, ERRORS, needs
from dlq.http import request_id
from dlq.messages import queries
from dlq.models import Message
from dlq.models.actions import AuditAction
from dlq.schemas import transfer
from dlq.schemas.actions import (
    EditIn,
    ReasonIn,
    ReplayIn,
    ReplayOut,
    RouteOut,
    RouteQuery,
    target_value,
)
from dlq.schemas.errors import ErrorOut
from dlq.schemas.filters import MessageFilter, MessageListQuery
from dlq.schemas.messages import MessageDetail, MessagePage

router = Router()
READ_ONE = {200: MessageDetail, 404: ErrorOut, **ERRORS}
ACT = {200: MessageDetail, **ACTION_ERRORS}


def _detail(message_id: int):
    message = queries.detail(message_id)
    if message is None:
        raise Http404(f"no message {message_id}")
    return message


@router.get("", response={200: MessagePage, **ERRORS})
def list_messages(request, params: Query[MessageListQuery]):
    """Stored messages, newest first, one keyset page at a time."""
    rows, next_cursor = queries.page(
        queries.filter_messages(params.given()), params.cursor, params.limit
    )
    return {"results": rows, "next_cursor": next_cursor}


NDJSON_DOC = {
    "responses": {
        200: {
            "description": "one message a line: the detail's fields without history and versions",
            "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
        }
    }
}
IMPORT_DOC = {
    "requestBody": {
        "required": True,
        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
    }
}


class ImportedOut(Schema):
    source_id: int | None = Field(description="its id where it was exported (null if none)")
    id: int = Field(description="the new message's id here")


class ImportOut(Schema):
    imported: int
    audit_id: int = Field(description="the `import` audit row")
    messages: list[ImportedOut] = Field(description="in the order of the lines")


@router.get("/export", response=ERRORS, openapi_extra=NDJSON_DOC)
def export_messages(request, params: Query[MessageFilter]):
    """Every message the list's filters select (newest first) as a download of
    `application/x-ndjson`: one message a line, its detail without `history` and
    `versions` (typed headers and properties as the detail gives them). Streamed a chunk
    at a time; audited as `export` with the filter and the count once the stream ends."""
    rid = request_id(request)
    lines = _audited_export(params.given(), request.auth, rid)
    return http.ndjson_download(lines, "dlq-messages", rid)


def _audited_export(filters: dict, actor, rid: str):
    count, complete = 0, False
    try:
        for n, lines in transfer.export_chunks(filters):
            count += n
            yield lines
        complete = True
    finally:  # also when the client goes away: what was sent, and that it stopped short
        detail = {"filter": transfer.filter_detail(filters), "count": count,
                  "complete": complete}  # fmt: skip
        audit.record(actor, AuditAction.EXPORT, detail=detail, request_id=rid)


@router.post("/import", response={200: ImportOut, **ERRORS}, auth=needs(ADMIN),
             openapi_extra=IMPORT_DOC)  # fmt: skip
def import_messages(request, params: Query[transfer.Target]):
    """Store exported NDJSON lines (the request body) as new parked messages (admin): their
    body, properties, headers and x-death as exported, in the line's `vhost` and `queue`
    unless `vhost` or `queue` is given here. All or nothing: a bad line is a 400 naming it
    (`line 3.body_base64`), and nothing is stored. Audited as `import`, with the ids they
    had where they were exported."""
    result = transfer.import_from(request, request.auth, "api", params, request_id(request))
    pairs = zip(result.source_ids, result.ids, strict=True)
    return {"imported": len(result.ids), "audit_id": result.audit_id,
            "messages": [{"source_id": s, "id": i} for s, i in pairs]}  # fmt: skip


@router.get("/{id}", response=READ_ONE)
def get_message(request, id: int):
    """One message: body, properties, typed headers, x-death and its lineage's history."""
    return _detail(id)


@router.patch("/{id}", response=ACT, auth=needs(OPERATOR))
def edit_message(request, id: int, payload: EditIn):
    """Edit a parked message (operator): `body_text` or `body_base64`, `headers` (typed JSON,
    see TypedValue; the object replaces all headers), `properties` (replaces them all), with a
    required `reason`. The previous version is kept; the audit row carries the diff. An edit
    that leaves body, headers and properties as they are is refused (400, "no change")."""
    message_actions.edit(id, request.auth, payload.reason, request_id=request_id(request),
                 **payload.changes())  # fmt: skip
    return _detail(id)


@router.post("/{id}/replay", response={200: ReplayOut, **ACTION_ERRORS}, auth=needs(OPERATOR))
def replay_message(request, id: int, payload: ReplayIn):
    """Republish a parked message (operator) with a publisher confirm. The message is sent with
    its typed headers minus the broker's x-death headers, plus dlq-replay-id, dlq-replay-count,
    dlq-origin-id. The broker's answer is a 200 whatever it is: `confirmed` (now replayed),
    `unroutable`, `nacked` or `error` (still parked). A target that cannot be resolved is 400,
    and so is a route into a queue the console drains, unless `allow_drained`.
    """
    result = message_actions.replay_one(
        id,
        target_value(payload.target),
        request.auth,
        payload.reason,
        request_id(request),
        allow_drained=payload.allow_drained,
    )
    return {"outcome": result.outcome, "detail": result.detail,
            "replay_id": result.replay_id, "message": result.message_id}  # fmt: skip


@router.post("/{id}/discard", response=ACT, auth=needs(OPERATOR))
def discard_message(request, id: int, payload: ReasonIn):
    """Discard a parked message (operator; soft: restorable)."""
    message_actions.discard(id, request.auth, payload.reason, request_id(request))
    return _detail(id)


@router.post("/{id}/restore", response=ACT, auth=needs(OPERATOR))
def restore_message(request, id: int, payload: ReasonIn):
    """A discarded message back to parked (operator)."""
    message_actions.restore(id, request.auth, payload.reason, request_id(request))
    return _detail(id)


@router.get("/{id}/route", response={200: RouteOut, 404: ErrorOut, **ERRORS})
def route_preview(request, id: int, params: Query[RouteQuery]):
    """Where a replay to `target` (or to `exchange` + `routing_key`) would go now: the
    exchange, routing key and the queues bound to receive it (from the management API)."""
    message = Message.objects.filter(pk=id).first()
    if message is None:
        raise Http404(f"no message {id}")
    try:
        route = replay.resolve(message, params.chosen())
    except replay.ReplayError as e:
        raise ActionError({"target": [str(e)]}) from None
    headers = routes.headers_of(message)
    found = routes.preview(message.vhost, route, headers)
    override = replay.override_for(message) if route.target == "original" else None
    return {
        **found,
        "replay_target": override.queue_pattern if override else None,
        "note": replay.route_note(message, route),
    }
