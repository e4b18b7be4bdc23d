"""What the message page shows beside the body: typed header and property rows, and the
history with each edit's diff. Plain data for the templates, which escape all of it."""

import difflib
import json
from dataclasses import dataclass

from dlq.actions import DIFF_TEXT_LIMIT
from dlq.ops_models import AuditEntry

PREVIEW_CHARS = 4000  # a forged header can be huge: the page shows its start
# The wire types of the basic properties (AMQP 0-9-1), which the stored JSON leaves implicit.
PROPERTY_TYPES = {"delivery_mode": "octet", "priority": "octet", "timestamp": "timestamp"}


@dataclass(frozen=True)
class FieldRow:
    name: str
    type: str
    value: str


def shown(typed) -> str:
    """A typed value as the page writes it: scalars plainly, bytes as base64, nested values
    (tables, arrays) as indented typed JSON."""
    if not isinstance(typed, dict):
        return _json(typed)
    kind = typed.get("type")
    if "base64" in typed:
        return f"base64:{typed['base64']}"[:PREVIEW_CHARS]
    value = typed.get("value")
    if kind in ("table", "array"):
        return _json(value)
    if kind == "timestamp" and isinstance(value, int):
        return f"{value} (seconds since 1970)"
    return str(value)[:PREVIEW_CHARS]


def _json(value) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)[:PREVIEW_CHARS]


def header_rows(headers: dict) -> list[FieldRow]:
    return [FieldRow(str(name), str(typed.get("type", "?")) if isinstance(typed, dict)
                     else "?", shown(typed)) for name, typed in headers.items()]  # fmt: skip


def property_rows(properties: dict) -> list[FieldRow]:
    """Properties are plain JSON; a short string that is not UTF-8 is {"base64": ...}."""
    rows = []
    for name, value in properties.items():
        if isinstance(value, dict) and "base64" in value:
            rows.append(FieldRow(name, "shortstr (bytes)", f"base64:{value['base64']}"))
        else:
            rows.append(FieldRow(name, PROPERTY_TYPES.get(name, "shortstr"), str(value)))
    return rows


def with_diffs(history: list[dict]) -> list[dict]:
    """The history events, each edit with its diff from the audit row."""
    audit_ids = [e["detail"]["audit_id"] for e in history if e["event"] == "edited"]
    diffs = dict(AuditEntry.objects.filter(pk__in=audit_ids).values_list("pk", "diff_json"))
    events = []
    for event in history:
        if event["event"] == "edited":
            raw = diffs.get(event["detail"]["audit_id"]) or "{}"
            event = {**event, "diff": edit_diff(json.loads(raw))}
        events.append(event)
    return events


def edit_diff(diff: dict) -> dict:
    """An edit's audit diff for the page: the body as a unified diff (or sizes when it is
    not text), and one row per changed property or header with its before and after."""
    body = diff.get("body") or {}
    return {
        "body_unified": _unified(body),
        "body_sizes": (body.get("before_size"), body.get("after_size"))
        if "before_size" in body
        else None,
        "fields": [
            {"section": section, "name": name,
             "before": _maybe(change.get("before")), "after": _maybe(change.get("after"))}
            for section in ("properties", "headers")
            for name, change in (diff.get(section) or {}).items()
        ],
    }  # fmt: skip


def _unified(body: dict) -> str | None:
    """The body's diff one change per line (the stored one runs lines together when a body
    does not end with a newline)."""
    texts = (body.get("before"), body.get("after"))
    if not all(isinstance(t, str) and len(t) < DIFF_TEXT_LIMIT for t in texts):
        return body.get("unified")  # binary, or cut: only the stored diff covers it all
    lines = difflib.unified_diff(body["before"].splitlines(), body["after"].splitlines(),
                                 "before", "after", lineterm="")  # fmt: skip
    return "\n".join(lines)


def _maybe(value) -> str:
    return "(not set)" if value is None else shown(value)
