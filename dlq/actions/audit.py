"""The audit trail: one self-contained, append-only row per operator action."""

import csv
import io
import json
import re
import uuid
from datetime import UTC, datetime

from django.http import StreamingHttpResponse

from dlq.messages.history import mentions
from dlq.models.actions import AuditEntry

REQUEST_ID_HEADER = "X-Request-ID"
REQUEST_ID_MAX = 64
_NOT_IN_REQUEST_ID = re.compile(r"[^A-Za-z0-9._:-]")
CSV_BATCH = 2000


def request_id(request) -> str:
    """The request's id: the caller's X-Request-ID (only [A-Za-z0-9._:-], at most 64
    characters) or a new one. Audit rows carry it and every API response echoes it."""
    known = getattr(request, "dlq_request_id", None)
    if known is None:
        given = _NOT_IN_REQUEST_ID.sub("", request.headers.get(REQUEST_ID_HEADER, ""))
        known = given[:REQUEST_ID_MAX] or uuid.uuid4().hex
        request.dlq_request_id = known
    return known


def actor_fields(actor) -> dict:
    """An actor is a user, or a name for the system (a job worker, a command)."""
    if isinstance(actor, str):
        return {"actor_id": None, "actor_name": actor}
    return {"actor_id": actor.pk, "actor_name": actor.get_username()}


def record(actor, action: str, reason: str = "", message_ids=(), job_id=None, diff=None,
           detail=None, request_id: str = "") -> AuditEntry:  # fmt: skip
    return AuditEntry.objects.create(
        at=datetime.now(UTC),
        action=action,
        reason=reason,
        message_ids_json=json.dumps(list(message_ids)),
        job_id=job_id,
        diff_json=json.dumps(diff) if diff is not None else "",
        detail=json.dumps(detail) if detail is not None else "",
        request_id=request_id,
        **actor_fields(actor),
    )


CSV_COLUMNS = ["id", "at", "actor", "action", "message_ids", "job_id", "reason", "diff",
               "detail", "request_id"]  # fmt: skip


def _csv_cell(value: str) -> str:
    # Spreadsheet formula injection: a reason starting with = + - @ must stay text.
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def to_csv(entries) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for e in entries:
        row = [e.pk, e.at.isoformat(), e.actor_name, e.action, e.message_ids_json,
               e.job_id or "", e.reason, e.diff_json, e.detail, e.request_id]  # fmt: skip
        writer.writerow([_csv_cell(str(v)) for v in row])
    return out.getvalue()


def filter_audit(filters: dict):
    """Audit rows matching `filters` (actor, action, message, job, after, before), newest
    first."""
    qs = AuditEntry.objects.order_by("-id")
    if filters.get("actor") is not None:
        qs = qs.filter(actor_name=filters["actor"])
    if filters.get("action") is not None:
        qs = qs.filter(action=filters["action"])
    if filters.get("message") is not None:
        qs = qs.filter(mentions(filters["message"]))
    if filters.get("job") is not None:
        qs = qs.filter(job_id=filters["job"])
    if filters.get("after") is not None:
        qs = qs.filter(at__gte=filters["after"])
    if filters.get("before") is not None:
        qs = qs.filter(at__lt=filters["before"])
    return qs


def recent_audit(limit: int = 10) -> list[AuditEntry]:
    return list(AuditEntry.objects.order_by("-id")[:limit])


def csv_download(entries, request_id: str) -> StreamingHttpResponse:
    """Every row of `entries` as a CSV download, the same for the API and the audit page."""
    response = StreamingHttpResponse(_csv_chunks(entries), content_type="text/csv; charset=utf-8")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = f'attachment; filename="dlq-audit-{stamp}.csv"'
    response[REQUEST_ID_HEADER] = request_id
    return response


def _csv_chunks(entries):
    """The CSV in batches of rows (keyset by id), so an export never holds the whole trail."""
    yield to_csv([])  # the header row
    last_id = None
    while True:
        batch = list((entries.filter(id__lt=last_id) if last_id else entries)[:CSV_BATCH])
        if not batch:
            return
        yield to_csv(batch).split("\r\n", 1)[1]
        last_id = batch[-1].pk
