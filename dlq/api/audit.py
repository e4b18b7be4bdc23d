"""/api/v1/audit: the operator actions, newest first, as JSON pages or a CSV download."""

from datetime import UTC, datetime

from django.http import StreamingHttpResponse
from ninja import Query, Router

from dlq.actions import audit
from dlq.actions.audit import filter_audit
from dlq.api.base import ERRORS, REQUEST_ID_HEADER, request_id
from dlq.messages import queries
from dlq.schemas.audit import AuditPage
from dlq.schemas.filters import AuditQuery

router = Router()
CSV_BATCH = 2000
CSV_DOC = {
    "responses": {
        200: {
            "description": "a page of audit rows; with format=csv every matching row as CSV",
            "content": {"text/csv": {"schema": {"type": "string"}}},
        }
    }
}


@router.get("", response={200: AuditPage, **ERRORS}, openapi_extra=CSV_DOC)
def list_audit(request, params: Query[AuditQuery]):
    """Audit rows, newest first, keyset-paginated; filters: `actor`, `action`, `message`
    (rows naming that message id), `job`, `after`, `before`. `format=csv` downloads every
    matching row (cells starting with = + - @ are prefixed with ' for spreadsheets)."""
    entries = filter_audit(params.filters())
    if params.format == "csv":
        return csv_response(request, entries)
    rows, next_cursor = queries.keyset(entries, params.cursor, params.limit)
    return {"results": rows, "next_cursor": next_cursor}


def csv_response(request, entries) -> StreamingHttpResponse:
    response = StreamingHttpResponse(_csv_chunks(entries), content_type="text/csv; charset=utf-8")
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = f'attachment; filename="dlq-audit-{stamp}.csv"'
    response[REQUEST_ID_HEADER] = request_id(request)
    return response


def _csv_chunks(entries):
    """The CSV in batches of rows (keyset by id), so an export never holds the whole trail."""
    yield audit.to_csv([])  # the header row
    last_id = None
    while True:
        batch = list((entries.filter(id__lt=last_id) if last_id else entries)[:CSV_BATCH])
        if not batch:
            return
        yield audit.to_csv(batch).split("\r\n", 1)[1]
        last_id = batch[-1].pk
