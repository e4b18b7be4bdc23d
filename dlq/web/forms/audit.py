"""The audit page's query string, validated by the API's own model (schemas.filters)."""

from pydantic import ValidationError

from dlq.schemas.errors import pydantic_errors
from dlq.schemas.filters import AuditQuery


def parse_audit(query) -> tuple[AuditQuery | None, dict[str, list[str]]]:
    """The audit page's filters, validated exactly like GET /api/v1/audit."""
    try:
        return AuditQuery.model_validate({k: query.get(k) for k in query}), {}
    except ValidationError as e:
        return None, pydantic_errors(e)
