"""The alert lifecycle: each group an alert named is `open`, `acknowledged` (it has an
owner: the Acknowledge button, or an owner set in the console) or `resolved` (nothing of it
is parked). Derived at read time from the worklist's counts and the triage, never stored,
so never stale; a sent chat alert keeps the states it shows (`shown_states`) so a change
edits it once (dlq/alerts/telegram/edits.py).

A resolved group is forgotten by the engine (its KnownGroup row goes), so its next arrival
counts as a new failure group and alerts at once."""

from django.db.models import Q

from dlq.groups import worklist
from dlq.models import AlertAttempt, AttemptStatus, GroupTriage, KnownGroup

OPEN, ACKNOWLEDGED, RESOLVED = "open", "acknowledged", "resolved"
STATES = (OPEN, ACKNOWLEDGED, RESOLVED)
MAX_LIMIT = 200
DIGEST_KINDS = ("digest", "new_group")


def states(groups: list[str]) -> dict[str, dict]:
    """Each group's state, and who acknowledged it and when (None while open)."""
    parked = worklist.parked(list(groups))
    triage = {t.group: t for t in GroupTriage.objects.filter(group__in=groups, owner__isnull=False)
              .select_related("owner")}  # fmt: skip
    found = {}
    for group in groups:
        owned = triage.get(group)
        state = RESOLVED if parked[group] == 0 else ACKNOWLEDGED if owned else OPEN
        found[group] = {
            "state": state,
            "acknowledged_by": owned.owner.get_username() if owned else None,
            "acknowledged_at": owned.owned_at if owned else None,
        }
    return found


def sent():
    """The alerts sent, newest first: one per digest and channel that reached the channel."""
    return (
        AlertAttempt.objects.filter(status=AttemptStatus.SENT, kind__in=DIGEST_KINDS)
        .exclude(digest=None)
        .select_related("digest")
        .order_by("-finished_at", "-id")
    )


def groups_of(attempt: AlertAttempt) -> list[tuple[str, int]]:
    """The groups an alert named and how many of each it counted, largest first."""
    groups = (attempt.digest.groups if attempt.digest else None) or {}
    return sorted(((g, int(info.get("count", 0))) for g, info in groups.items()),
                  key=lambda gc: (-gc[1], gc[0]))  # fmt: skip


def described(attempts: list[AlertAttempt]) -> list[dict]:
    """The API's alerts: each with its groups and their states (one read for all)."""
    named = {a.pk: groups_of(a) for a in attempts}
    now = states(sorted({g for pairs in named.values() for g, _ in pairs}))
    return [
        {
            "id": a.pk,
            "at": a.finished_at,
            "channel": a.channel_name,
            "groups": [{"group": g, "count": n, **now[g]} for g, n in named[a.pk]],
        }
        for a in attempts
    ]


def forget_resolved() -> int:
    """Forget the known groups nothing of is parked: the next arrival of one alerts at once
    as a new failure group. The groups forgotten."""
    known = list(KnownGroup.objects.values_list("group", flat=True)[:10_000])
    resolved = [g for g, n in worklist.parked(known).items() if n == 0]
    if resolved:
        KnownGroup.objects.filter(group__in=resolved).delete()
    return len(resolved)


def shown_as(state: str, owner: str | None) -> str:
    """What a chat alert shows of a group, as `shown_states` keeps it: the state, and who
    owns it ("acknowledged by alice"), so an owner's change edits the alert too."""
    return f"{state} by {owner}" if state == ACKNOWLEDGED and owner else state


def shown(attempt: AlertAttempt) -> dict[str, str]:
    """What the groups a sent chat alert shows are now (the keys of its `shown_states`:
    the groups it lists, at most texts.TOP of the digest's)."""
    now = states(list(attempt.shown_states or {}))
    return {g: shown_as(s["state"], s["acknowledged_by"]) for g, s in now.items()}


def stale_chat_alerts(kind: str, since) -> list[AlertAttempt]:
    """Sent `kind` alerts since `since` that can be edited and whose groups' states have
    changed from what they show."""
    candidates = sent().filter(channel__kind=kind, finished_at__gte=since).exclude(
        Q(chat_message={}) | Q(chat_message__isnull=True))  # fmt: skip
    return [a for a in candidates[:200] if shown(a) != (a.shown_states or {})]
