"""What the pages and the API share about HTTP: the request id, and CSV and NDJSON
downloads.

Below every domain package (as NetBox keeps request ids in its middleware): it may import
the models only, and needs none.
"""

import re
import uuid
from datetime import UTC, datetime

from django.http import StreamingHttpResponse

REQUEST_ID_HEADER = "X-Request-ID"
REQUEST_ID_MAX = 64
_NOT_IN_REQUEST_ID = re.compile(r"[^A-Za-z0-9._:-]")


def request_id(request) -> str:
    """The request's id: the caller's X-Request-ID (only [A-Za-z0-9._:-], at most 64
    characters) or a new one. Audit rows carry it and every API response echoes it."""
    known = getattr(request, "dlq_request_id", None)
    if known is None:
        given = _NOT_IN_REQUEST_ID.sub("", request.headers.get(REQUEST_ID_HEADER, ""))
        known = given[:REQUEST_ID_MAX] or uuid.uuid4().hex
        request.dlq_request_id = known
    return known


def csv_download(chunks, name: str, request_id: str) -> StreamingHttpResponse:
    """CSV text, streamed chunk by chunk, as the download `NAME-<UTC time>.csv`: the same
    for the API and the pages."""
    return download(chunks, f"{name}-{_stamp()}.csv", "text/csv; charset=utf-8", request_id)


def ndjson_download(chunks, name: str, request_id: str) -> StreamingHttpResponse:
    """NDJSON lines (bytes), streamed, as the download `NAME-<UTC time>.ndjson`."""
    return download(chunks, f"{name}-{_stamp()}.ndjson", "application/x-ndjson", request_id)


def download(chunks, filename: str, content_type: str, request_id: str) -> StreamingHttpResponse:
    response = StreamingHttpResponse(chunks, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    response[REQUEST_ID_HEADER] = request_id
    return response


def _stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
