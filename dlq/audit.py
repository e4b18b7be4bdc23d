"""The audit trail: one self-contained, append-only row per operator action.

Below every domain package (as NetBox keeps its change log in `core/`): the operator actions,
sign-in, alert channels and mutes all record here, the pages and the API read the same
filters and CSV rows, and retention purges it. It may import the models only.
"""

import csv
import io
import json
from datetime import UTC, datetime

from django.db import DatabaseError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from dlq.models.actions import AuditAction, AuditEntry

CSV_BATCH = 2000
# The embedded database's append-only guards (migration 0004 creates them; an audit purge
# lifts the DELETE one inside its own transaction).
SQLITE_TRIGGERS = [
    """CREATE TRIGGER dlq_audit_no_update BEFORE UPDATE ON dlq_auditentry
       BEGIN SELECT RAISE(ABORT, 'dlq_auditentry is append-only: UPDATE refused'); END;""",
    """CREATE TRIGGER dlq_audit_no_delete BEFORE DELETE ON dlq_auditentry
       BEGIN SELECT RAISE(ABORT, 'dlq_auditentry is append-only: DELETE refused'); END;""",
]


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


def mentions(message_id: int) -> Q:
    """Audit rows whose message_ids contain `message_id`.

    message_ids_json is always written by json.dumps (audit.record): "[7]", "[7, 12]". An id
    is one of the list's items exactly when the text equals "[7]", starts with "[7, ", ends
    with ", 7]" or contains ", 7, ", so "17" or "70" never match "7". A LIKE with a leading
    wildcard scans, but the newest-first keyset order stops at the page's end.
    """
    n = int(message_id)
    return (
        Q(message_ids_json=f"[{n}]")
        | Q(message_ids_json__startswith=f"[{n}, ")
        | Q(message_ids_json__endswith=f", {n}]")
        | Q(message_ids_json__contains=f", {n}, ")
    )


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


def csv_chunks(entries):
    """The CSV in batches of rows (keyset by id), so an export never holds the whole trail."""
    yield to_csv([])  # the header row
    last_id = None
    while True:
        batch = list((entries.filter(id__lt=last_id) if last_id else entries)[:CSV_BATCH])
        if not batch:
            return
        yield to_csv(batch).split("\r\n", 1)[1]
        last_id = batch[-1].pk


def purge(cutoff, size: int) -> int:
    """Delete the oldest `size` rows older than `cutoff`, recording the purge as a row of its
    own; how many went (dlq/messages/retention.py says when, and how old).

    On PostgreSQL through dlq_purge_audit (migration 0017): the one path past the
    append-only trigger, which records the purge itself, and which a deployment can grant to
    a console role that may not otherwise touch audit rows."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT dlq_purge_audit(%s, %s)", [cutoff, size])
            return cursor.fetchone()[0]
    return _purge_sqlite(cutoff, size)


def allow_purge(days: int) -> bool:
    """Set the owner's floor for audit retention (dlq_auditretention) to DLQ_AUDIT_RETENTION_DAYS
    where this connection may (it owns the tables); False where it may not, and the owner's
    value stands (README, Audit)."""
    if connection.vendor != "postgresql":
        return True
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("UPDATE dlq_auditretention SET days = %s WHERE id = 1", [days])
    except DatabaseError:
        return False
    return True


def _purge_sqlite(cutoff, size: int) -> int:
    """The embedded database has no roles: the trigger is lifted inside this one
    transaction only (DDL is transactional), and the purge is audited like PostgreSQL's."""
    with transaction.atomic():
        ids = list(
            AuditEntry.objects.filter(at__lt=cutoff)
            .order_by("id")
            .values_list("id", flat=True)[:size]
        )
        if ids:
            with connection.cursor() as cursor:
                cursor.execute("DROP TRIGGER dlq_audit_no_delete")
                AuditEntry.objects.filter(id__in=ids).delete()
                cursor.execute(SQLITE_TRIGGERS[1])  # the DELETE guard, back
            AuditEntry.objects.create(
                at=timezone.now(), actor_name="retention", action=AuditAction.AUDIT_PURGE,
                reason="DLQ_AUDIT_RETENTION_DAYS",
                detail=json.dumps({"purged": len(ids), "before": cutoff.isoformat()}),
            )  # fmt: skip
    return len(ids)
