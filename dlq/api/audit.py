"""/api/v1/audit: the operator actions, newest first, as JSON pages or a CSV download."""

from ninja import Query, Router

from dlq import audit, http
from dlq.api.base import ERRORS
from dlq.messages import queries
from dlq.schemas.audit import AuditPage
from dlq.schemas.filters import AuditQuery

router = Router()
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
    entries = audit.filter_audit(params.filters())
    if params.format == "csv":
        return http.csv_download(audit.csv_chunks(entries), "dlq-audit", http.request_id(request))
    rows, next_cursor = queries.keyset(entries, params.cursor, params.limit)
    return {"results": rows, "next_cursor": next_cursor}
