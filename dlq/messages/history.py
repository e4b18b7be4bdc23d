"""A stored message's whole life, for the API detail and the message page: arrivals, edits
(with their diffs), discards, restores and replays, over every life of its lineage."""

import difflib
import json

from django.db.models import Q

from dlq.audit import mentions
from dlq.messages.display import shown
from dlq.models import Message
from dlq.models.actions import AuditAction, AuditEntry, Replay


def history(message: Message) -> list[dict]:
    """The events of the message's whole lineage (every life it had), oldest first: arrivals,
    edits, discards, restores (from the audit trail) and replays (with the broker's answer)."""
    root = message.root_id
    lives = list(
        Message.objects.filter(Q(pk=root) | Q(lineage_id=root))
        .order_by("received_at", "id")
        .values("id", "received_at", "queue", "death_reason")
    )
    ids = [life["id"] for life in lives]
    events = [_arrival(life) for life in lives] + _audited(ids) + _replays(ids)
    return sorted(events, key=lambda event: event["at"])  # stable: arrivals first on a tie


def _arrival(life: dict) -> dict:
    return {"at": life["received_at"], "event": "arrived", "actor": None, "message": life["id"],
            "detail": {"queue": life["queue"], "reason": life["death_reason"]}}  # fmt: skip


HISTORY_ACTIONS = {
    AuditAction.EDIT: "edited",
    AuditAction.DISCARD: "discarded",
    AuditAction.RESTORE: "restored",
}


def _audited(ids: list[int]) -> list[dict]:
    if not ids:
        return []
    lineage = Q()
    for message_id in ids:
        lineage |= mentions(message_id)
    entries = AuditEntry.objects.filter(lineage, action__in=list(HISTORY_ACTIONS)).order_by("id")
    events = []
    for entry in entries:
        detail = {"reason": entry.reason, "audit_id": entry.pk}
        if entry.action == AuditAction.EDIT:
            detail["changed"] = sorted(entry.diff or {})
        for message_id in set(entry.message_ids) & set(ids):
            events.append({"at": entry.at, "event": HISTORY_ACTIONS[entry.action],
                           "actor": entry.actor_name, "message": message_id,
                           "detail": detail})  # fmt: skip
    return events


def _replays(ids: list[int]) -> list[dict]:
    attempts = Replay.objects.filter(message_id__in=ids).order_by("id")
    return [_replayed(attempt) for attempt in attempts]


def _replayed(attempt: Replay) -> dict:
    detail = {"replay_id": attempt.replay_id, "target": attempt.target,
              "exchange": attempt.exchange, "routing_key": attempt.routing_key,
              "outcome": attempt.outcome or "pending", "detail": attempt.detail,
              "job": attempt.job_id}  # fmt: skip
    return {"at": attempt.started_at, "event": "replayed", "actor": attempt.actor_name,
            "message": attempt.message_id, "detail": detail}  # fmt: skip


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
        if "before_base64" in body  # not text: no line diff to show
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


DIFF_TEXT_LIMIT = 64 * 1024
