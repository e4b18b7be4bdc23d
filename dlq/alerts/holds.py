"""Failure groups on hold (dlq/groups/triage.py), as digests see them: a held group's
arrivals are kept out of every digest while the hold lasts; once it has ended, the next
pass folds them into each rule's digest at once, the group marked with the hold's end, and
the digest goes out (a hold's end is news, like a new group).

A hold keeps back the group's arrivals received since it began, in every pass while it is
pending, the pass that ends it included; that pass takes all of them up to the horizon, and
later passes count the group's arrivals as ever. So each is counted once, whatever the
clocks of the drainer and the console say about when the hold ended."""

from datetime import UTC

from django.db.models import Q

from dlq.models import AlertDigest, GroupTriage, Message


def _during(hold: GroupTriage) -> Q:
    return Q(group=hold.group, received_at__gte=hold.held_from)


def without_held(rows, holds: list[GroupTriage]):
    """The arrivals no hold keeps back."""
    for hold in holds:
        rows = rows.exclude(_during(hold))
    return rows


def released_span(released: list[GroupTriage], end: int):
    """What arrived during the holds that ended, up to the horizon; None without any."""
    if not released:
        return None
    during = Q(pk__in=[])
    for hold in released:
        during |= _during(hold)
    return Message.objects.filter(during, id__lte=end)


def mark(digest: AlertDigest, released: list[GroupTriage], held: dict[str, int]) -> None:
    """Name the ended holds in the digest: the groups whose arrivals it now holds, each with
    how many arrived during its hold and when the hold ended."""
    for hold in released:
        info = digest.groups.get(hold.group)
        if info is None or not held.get(hold.group):
            continue
        info["held"] = info.get("held", 0) + held[hold.group]
        info["held_until"] = hold.held_to.astimezone(UTC).isoformat()
