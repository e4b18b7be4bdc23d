"""The audit log: filters, keyset pages, the CSV export of the API; each row as a sentence
(web/sentences.py) with what it changed as a diff, the raw JSON kept behind a <details>."""

import json

from django.shortcuts import render
from django.views.decorators.http import require_safe

from dlq import audit, http
from dlq.accounts.roles import VIEWER
from dlq.broker import names
from dlq.messages import queries
from dlq.models import Message
from dlq.models.actions import AuditAction
from dlq.web.access import role_view
from dlq.web.forms.audit import parse_audit
from dlq.web.sentences import changes, sentence


def _pretty(value) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False, sort_keys=True)


def diff_rows(diff: dict | None) -> list[dict]:
    """An edit's before/after as rows for the template (which shows every value through the
    `visible` filter: a header name may hold any byte)."""
    rows = []
    for section in ("properties", "headers"):
        for key, change in (diff or {}).get(section, {}).items():
            rows.append({"field": f"{section}.{key}",
                         "before": _pretty(change.get("before")),
                         "after": _pretty(change.get("after"))})  # fmt: skip
    return rows


def _parsed(entry):
    if not entry.detail:
        return None
    try:
        return json.loads(entry.detail)
    except ValueError:
        return None


def _shown(value) -> str:
    """A value of a diff: text as it is, anything else as JSON."""
    return value if isinstance(value, str) else _pretty(value)


def _change_rows(detail) -> list[dict]:
    """A change with before and after (a replay override's) field by field."""
    if not isinstance(detail, dict) or not {"before", "after"} <= detail.keys():
        return []
    return [{"field": c["field"], "before": _shown(c["before"]), "after": _shown(c["after"])}
            for c in changes(detail["before"], detail["after"])]  # fmt: skip


def _row(entry) -> dict:
    diff, detail = entry.diff, _parsed(entry)
    body = (diff or {}).get("body") or {}
    body_diff = body.get("unified") or ("(binary body changed)" if body else "")
    raw = _pretty(detail) if detail is not None else entry.detail
    return {"entry": entry, "sentence": sentence(entry, detail),
            "changes": diff_rows(diff) + _change_rows(detail), "body_diff": body_diff,
            "raw": raw, "raw_diff": _pretty(diff) if diff else ""}  # fmt: skip


SHOWN_IDS = 10  # message ids the page links per row (the template's slice)


def _with_queues(rows: list[dict]) -> list[dict]:
    """Each row's queues (vhost-qualified) of the messages it links: one query per page."""
    ids = {mid for row in rows for mid in row["entry"].message_ids[:SHOWN_IDS]}
    found = Message.objects.filter(pk__in=ids).values_list("pk", "vhost", "queue")
    where = {pk: names.qualified(vhost, queue) for pk, vhost, queue in found}
    for row in rows:
        shown = row["entry"].message_ids[:SHOWN_IDS]
        row["queues"] = sorted({where[mid] for mid in shown if mid in where})
    return rows


@require_safe
@role_view(VIEWER)
def audit_list(request):
    query, errors = parse_audit(request.GET)
    context = {"errors": errors, "actions": AuditAction.choices, "params": request.GET}
    if errors:
        return render(request, "audit/list.html", context, status=400)
    entries = audit.filter_audit(query.filters())
    if query.format == "csv":
        return http.csv_download(audit.csv_chunks(entries), "dlq-audit", http.request_id(request))
    rows, next_cursor = queries.keyset(entries, query.cursor, query.limit)
    csv_query = request.GET.copy()
    csv_query["format"] = "csv"
    csv_query.pop("cursor", None)
    more = request.GET.copy()
    more["cursor"] = next_cursor or ""
    first = csv_query.copy()
    first.pop("format")
    rows = _with_queues([_row(e) for e in rows])
    context.update(rows=rows, next_query=more.urlencode() if next_cursor
                   else None, csv_query=csv_query.urlencode(), paged=bool(query.cursor),
                   first_query=first.urlencode())  # fmt: skip
    return render(request, "audit/list.html", context)
