"""Which parked messages a policy will replay, and when: the due index (RedriveDue).

A message is matched once, when it arrives: the beat's tick takes the messages stored
since the matcher's mark, up to the search indexer's watermark (every message at or below
it is committed, dlq/messages/search.py explains why that is not simply the highest id), so
the drainer's hot path is untouched. A policy saved later matches the parked messages
there are (`rematch`). The first active policy (lowest id) that matches a message takes it.

`attempt` counts the policy's redrives along the message's lineage: a message that comes
back (its `previous` is the one the policy replayed) starts at its predecessor's count, and
is a *return* of the policy (`returned_at`, what tripping counts). Attempt k is due
`delay × backoff^k` after the arrival; at `max_attempts` there is none: exhausted.
"""

from datetime import datetime, timedelta

from django.db import transaction

from dlq.messages import search
from dlq.models import Message, Status
from dlq.models.redrive import (
    PolicyState,
    RedriveDue,
    RedriveMark,
    RedrivePolicy,
)

BATCH = 5000  # messages one statement matches
MARK = 1  # the one row's primary key
PLACE_FIELDS = ("id", "received_at", "previous_id")


def matched(policy: RedrivePolicy):
    """The messages the policy's match names (any status)."""
    return Message.objects.filter(policy.matches())


def delay(policy: RedrivePolicy, attempt: int) -> timedelta:
    return timedelta(seconds=policy.delay_seconds * policy.backoff**attempt)


def schedule(row: RedriveDue, policy: RedrivePolicy, since: datetime) -> None:
    """Set the row's next redrive, `attempt` redrives done, counting from `since`."""
    row.exhausted = row.attempt >= policy.max_attempts
    row.next_at = None if row.exhausted else since + delay(policy, row.attempt)


def active() -> list[RedrivePolicy]:
    return list(RedrivePolicy.objects.filter(state=PolicyState.ACTIVE, enabled=True).order_by("id"))


def match_arrivals() -> int:
    """Match the messages stored since the mark against the active policies; the rows made.
    One caller at a time (the mark's row lock); another returns 0 at once."""
    start_mark()
    with transaction.atomic():
        mark = RedriveMark.objects.select_for_update(skip_locked=True).filter(pk=MARK).first()
        if mark is None:
            return 0
        upto = min(search.indexed_upto(), _next_id(mark.upto) + BATCH - 1)
        if upto <= mark.upto:
            return 0
        made = 0
        for policy in active():
            arrivals = matched(policy).filter(id__gt=mark.upto, id__lte=upto)
            made += _place(policy, arrivals.filter(status=Status.PARKED))
        mark.upto = upto
        mark.save(update_fields=["upto"])
    return made


def _next_id(after: int) -> int:
    """The first message id above `after` (or `after` + 1 when there is none): a batch
    starts there, so a gap in the ids (retention purged them, a rolled-back drain used
    them up) is stepped over at once, not walked through BATCH ids a tick."""
    found = Message.objects.filter(id__gt=after).order_by("id").values_list("id", flat=True)
    return found.first() or after + 1


def start_mark() -> None:
    """The matcher starts where the search indexer is: what is stored before a policy's
    first save, that save matches (rematch), so no arrival is left between the two."""
    if not RedriveMark.objects.filter(pk=MARK).exists():
        RedriveMark.objects.get_or_create(pk=MARK, defaults={"upto": search.indexed_upto()})


def rematch(policy: RedrivePolicy) -> None:
    """After a save: the policy's waiting rows follow its new match and timing, and the
    parked messages it now matches that no policy holds are added (in the caller's
    transaction). One it no longer matches goes to the next active policy matching it."""
    start_mark()
    waiting = RedriveDue.objects.filter(policy=policy, message__status=Status.PARKED)
    if policy.state != PolicyState.ACTIVE:
        return
    let_go = waiting.exclude(message__in=matched(policy).values("id"))
    dropped = list(let_go.values_list("message_id", flat=True))
    let_go.delete()
    _hand_over(dropped)
    for row in waiting.select_related("message").only("message__received_at", *_ROW):
        schedule(row, policy, row.message.received_at)
        row.save(update_fields=["next_at", "exhausted"])
    parked = matched(policy).filter(status=Status.PARKED).order_by("id")
    after = 0
    while ids := list(parked.filter(id__gt=after).values_list("id", flat=True)[:BATCH]):
        _place(policy, Message.objects.filter(id__in=ids))
        after = ids[-1]


def _hand_over(ids: list[int]) -> None:
    """The messages a policy let go are placed as arrivals are: the first active policy
    (lowest id) that matches one takes it; none may, and it just stays parked."""
    for start in range(0, len(ids), BATCH):
        for other in active():
            _place(other, matched(other).filter(id__in=ids[start:start + BATCH],
                                                status=Status.PARKED))  # fmt: skip


_ROW = ("message_id", "policy_id", "attempt", "next_at", "exhausted")


def _place(policy: RedrivePolicy, messages) -> int:
    """Due rows for `messages` that no policy holds yet, each carrying its predecessor's
    count under this policy."""
    found = list(messages.filter(redrive__isnull=True).values_list(*PLACE_FIELDS))
    before = [previous for _, _, previous in found if previous]
    earlier = {row.message_id: row for row in RedriveDue.objects.filter(
        policy=policy, message_id__in=before)}  # fmt: skip
    rows = []
    for message_id, received_at, previous in found:
        prior = earlier.get(previous)
        attempt = prior.attempt if prior else 0
        row = RedriveDue(message_id=message_id, policy=policy, attempt=attempt)
        if prior and prior.redriven_at:
            row.returned_at = received_at
        schedule(row, policy, received_at)
        rows.append(row)
    RedriveDue.objects.bulk_create(rows, ignore_conflicts=True)
    return len(rows)


def would_match(match: dict) -> int:
    """How many parked messages a match names now (the page's preview, before a save)."""
    return matched(RedrivePolicy(match=match)).filter(status=Status.PARKED).count()


def counts(policy: RedrivePolicy) -> dict:
    """What the policy matches now: parked messages, those waiting on it, those exhausted."""
    held = RedriveDue.objects.filter(policy=policy, message__status=Status.PARKED)
    return {"parked": would_match(policy.match),
            "waiting": held.filter(next_at__isnull=False).count(),
            "exhausted": held.filter(exhausted=True).count()}  # fmt: skip


def row_of(message: Message) -> RedriveDue | None:
    """The message's row in the due index, with its policy (None when no policy holds it)."""
    return RedriveDue.objects.filter(message_id=message.pk).select_related("policy").first()


def state_of(message: Message) -> dict | None:
    """The message detail's `redrive`: null unless a policy matches it."""
    row = RedriveDue.objects.filter(message_id=message.pk).first()
    return None if row is None else _state(row)


def states_of(ids: list[int]) -> dict[int, dict]:
    """state_of for many messages in one query (an export's chunk): id -> state."""
    return {row.message_id: _state(row) for row in RedriveDue.objects.filter(message_id__in=ids)}


def _state(row: RedriveDue) -> dict:
    return {"policy": row.policy_id, "attempt": row.attempt, "next_at": row.next_at,
            "exhausted": row.exhausted}  # fmt: skip
