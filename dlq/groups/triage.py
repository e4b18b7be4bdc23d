"""Who is on a failure group: its owner, note, ticket and hold, as an operator sets them
(one transaction and one `group_update` audit row with before and after), and the holds the
alert engine keeps arrivals back for.

A hold keeps the group's arrivals out of alerts (they are stored and counted as ever). The
engine needs the span of the hold after it ends, to name what arrived meanwhile in the next
digest: `held_from` is when the hold began, `held_to` when it ends (the hold's time, or the
moment an operator lifted it); the engine clears both once a digest has taken them.
"""

from datetime import datetime
from urllib.parse import urlsplit

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from dlq import audit
from dlq.actions.errors import ActionError, NotFound
from dlq.groups import worklist
from dlq.models import AuditAction, GroupTriage

MAX_NOTE = 10_000
MAX_URL = 2000
FIELDS = ("owner", "note", "ticket_url", "hold_until")


def update(actor, group: str, changes: dict, reason: str, request_id: str = "") -> dict:
    """Set any of FIELDS (`changes` holds only those given); the group as the worklist shows
    it after. 400 naming the field for a bad value, 404 for a group with nothing stored."""
    reason = reason.strip() if isinstance(reason, str) else ""
    errors = {} if reason else {"reason": ["is required: say why, for the audit trail"]}
    values = _checked({k: v for k, v in changes.items() if k in FIELDS}, errors)
    if errors:
        raise ActionError(errors)
    now = timezone.now()
    with transaction.atomic():
        if worklist.one(group) is None:
            raise NotFound(f"no stored message of group {group}")
        triage, _ = GroupTriage.objects.select_for_update().get_or_create(group=group)
        before = audited(triage)
        if "owner" in values and values["owner"] != triage.owner:
            triage.owned_at = now if values["owner"] else None  # the alert's "acknowledged at"
        for name, value in values.items():
            setattr(triage, name, value)
        if "hold_until" in values:
            _hold(triage, values["hold_until"], now)
        triage.save()
        after = audited(triage)
        audit.record(actor, AuditAction.GROUP_UPDATE, reason, request_id=request_id,
                     detail={"group": group, "before": before, "after": after})  # fmt: skip
    return worklist.one(group)


def _checked(changes: dict, errors: dict) -> dict:
    """The values to store (the owner as a user), each field's problem into `errors`."""
    values = dict(changes)
    if "owner" in changes:
        values["owner"] = _owner(changes["owner"], errors)
    note = changes.get("note")
    if note is not None and len(note) > MAX_NOTE:
        errors["note"] = [f"is longer than {MAX_NOTE:,} characters ({len(note):,})"]
    if "note" in changes and note is None:
        values["note"] = ""
    url = changes.get("ticket_url") or ""
    if "ticket_url" in changes:
        values["ticket_url"] = url.strip()
        if problem := _url_problem(url.strip()):
            errors["ticket_url"] = [problem]
    until = changes.get("hold_until")
    if until is not None and until <= timezone.now():
        errors["hold_until"] = ["is in the past: a hold lasts until a future time"]
    return values


def _owner(name: str | None, errors: dict):
    if name is None or name == "":
        return None
    user = get_user_model().objects.filter(username=name, is_active=True).first()
    if user is None:
        errors["owner"] = [f"no active user is named {name!r}"]
    return user


def _url_problem(url: str) -> str:
    if not url:
        return ""
    if len(url) > MAX_URL:
        return f"is longer than {MAX_URL} characters"
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        return "is not a URL"
    if parts.scheme.lower() not in ("http", "https"):
        return "must be an http or https URL"
    return "" if host else "must name a host (https://tickets.example.com/T-1)"


def _hold(triage: GroupTriage, until: datetime | None, now: datetime) -> None:
    """A new hold begins now; a changed one ends at its new time; a lifted one, now."""
    if until is not None:
        triage.held_from = triage.held_from or now
        triage.held_to = until
    elif triage.held_from is not None:
        triage.held_to = min(triage.held_to or now, now)


def audited(triage: GroupTriage) -> dict:
    """What the audit row keeps before and after, as the API gives it."""
    return {
        "owner": triage.owner.get_username() if triage.owner_id else None,
        "note": triage.note,
        "ticket_url": triage.ticket_url,
        "hold_until": triage.hold_until.isoformat() if triage.hold_until else None,
    }


# --- the alert engine's holds -------------------------------------------------------------


def holds() -> list[GroupTriage]:
    """Every hold whose arrivals no digest has named yet (those on, and those just ended),
    locked until the evaluation pass commits, so a hold set meanwhile is never forgotten."""
    return list(GroupTriage.objects.select_for_update().filter(held_from__isnull=False))


def forget(released: list[GroupTriage]) -> None:
    """A digest has named what arrived during these holds."""
    GroupTriage.objects.filter(pk__in=[t.pk for t in released]).update(held_from=None, held_to=None)
