"""The redrive scheduler: a beat tick matches new arrivals, trips the policies whose replays
keep coming back, and replays what is due, policy by policy.

Due rows are read from the index (policy, next_at) and taken under FOR UPDATE SKIP LOCKED,
each pushed a lease ahead (LEASE), so two ticks never take one row and a tick whose worker
died leaves its rows due again later. A replay is an ordinary one: claim_for_replay marks
the message `replaying` (so a manual job and a policy never hold it at once: whoever claims
second is refused), one confirming publisher per vhost publishes the tick's batch at the
policy's rate, and settle_replay records the outcome and the audit row with the actor
`policy:NAME`. Claim and settle are dlq/actions/message.py's, not a job per tick: a policy's
tick is a handful of messages, and a job's frozen selection, steps and page would be noise.

With `require_consumers` each distinct route is asked first (dlq/jobs/gate.py); a message
whose route has no consumer is due again GATE_RECHECK seconds later, no attempt counted.
"""

import logging
import math
from collections import defaultdict
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import transaction

from dlq.actions import message as message_actions
from dlq.actions import replay, routes
from dlq.actions.errors import ActionError, Conflict
from dlq.broker import amqp, mgmt
from dlq.broker.publisher import ConfirmPublisher
from dlq.jobs import gate
from dlq.models import Message, Status
from dlq.models.actions import Outcome
from dlq.models.redrive import RedriveDue, RedrivePolicy
from dlq.redrive import matching, tripping

log = logging.getLogger(__name__)

TICK_SECONDS = 2.0  # beat's interval (console/settings.py): a rate is spread over one tick
PER_TICK = 500  # messages one policy replays per tick at most
LEASE = timedelta(seconds=300)  # a taken row is due again this late if its tick died
GATE_RECHECK = timedelta(seconds=5)
BUSY_RECHECK = timedelta(seconds=5)  # a message claimed by someone else (a job, a person)


def tick(now: datetime | None = None) -> list[int]:
    """One pass: match, trip, replay what is due. Returns the ids of the alert attempts a
    trip queued (the task sends them)."""
    matching.match_arrivals()
    alerts = tripping.check()
    for policy in matching.active():
        run_policy(policy, now or datetime.now(UTC))
    return alerts


def run_policy(policy: RedrivePolicy, now: datetime) -> int:
    rows = _take(policy, now)
    if not rows:
        return 0
    messages = Message.objects.defer("body", "search_text").in_bulk([r.message_id for r in rows])
    by_vhost = defaultdict(list)
    for row in rows:
        message = messages.get(row.message_id)
        if message is None or message.status not in (Status.PARKED, Status.REPLAYING):
            _finish(row, next_at=None)  # replayed or discarded meanwhile: nothing to do
        elif message.status == Status.REPLAYING:
            _finish(row, next_at=now + BUSY_RECHECK)
        else:
            by_vhost[message.vhost].append((row, message))
    published, waits = 0, []
    for vhost, batch in by_vhost.items():
        published += _replay(policy, vhost, _gated(policy, vhost, batch, now, waits), now, waits)
    _note_waiting(policy, "" if published else "; ".join(dict.fromkeys(waits)), now)
    return published


def _note_waiting(policy: RedrivePolicy, why: str, now: datetime) -> None:
    """What the policies page and API say holds the policy's messages back: set by a tick
    that held them (kept, with its first time, while it stays the same), cleared by a tick
    that replayed."""
    if why == policy.waiting:
        return
    policy.waiting, policy.waiting_since = why[:2000], (now if why else None)
    changed = {"waiting": policy.waiting, "waiting_since": policy.waiting_since}
    RedrivePolicy.objects.filter(pk=policy.pk).update(**changed)


def _take(policy: RedrivePolicy, now: datetime) -> list[RedriveDue]:
    limit = PER_TICK
    if policy.rate_per_s:
        limit = min(limit, max(1, math.floor(policy.rate_per_s * TICK_SECONDS)))
    with transaction.atomic():
        due = RedriveDue.objects.select_for_update(skip_locked=True).filter(
            policy=policy, next_at__lte=now
        )
        rows = list(due.order_by("next_at")[:limit])
        RedriveDue.objects.filter(pk__in=[r.pk for r in rows]).update(next_at=now + LEASE)
    return rows


def _gated(policy, vhost: str, batch: list, now: datetime, waits: list) -> list:
    """The batch's messages that may go now. A route into a queue the console drains ends
    the message's redrives (exhausted, so alerted: a person decides), as a manual replay is
    refused there: the console would take it straight back, a loop. With the consumer gate,
    a route with no consumer waits."""
    overrides, taking, open_ = replay.load_overrides(), defaultdict(list), []
    routed = []
    for row, message in batch:
        try:
            route = replay.resolve(message, policy.target, overrides)
        except replay.ReplayError:
            open_.append((row, message))  # its claim fails, and says why
            continue
        taking[route].append(message)
        routed.append((row, message, route))
    verdicts = {route: _verdict(policy, vhost, route, messages)
                for route, messages in taking.items()}  # fmt: skip
    for row, message, route in routed:
        into_drained, closed = verdicts[route]
        if into_drained and len(taking[route]) > 1:  # a headers exchange: each its own way
            into_drained = _into_drained(vhost, route, [message])
        if into_drained:
            log.warning("redrive policy %s gives up on message %s: %s", policy.name,
                        message.pk, into_drained)  # fmt: skip
            RedriveDue.objects.filter(pk=row.pk).update(next_at=None, exhausted=True)
        elif closed:
            log.info("redrive policy %s waits: %s", policy.name, closed)
            waits.append(closed)
            _finish(row, next_at=now + GATE_RECHECK)
        else:
            open_.append((row, message))
    return open_


def _verdict(policy, vhost: str, route, messages: list) -> tuple[str, str]:
    """(why the route is refused for good, why it must wait now); "" where neither. Through
    a headers exchange, `messages` (those taking the route) decide where it goes."""
    into_drained = _into_drained(vhost, route, messages)
    if into_drained:
        return into_drained, ""
    if not policy.require_consumers:
        return "", ""
    return "", gate.reached(vhost, route, lambda: map(routes.headers_of, messages))


def _into_drained(vhost: str, route, messages: list) -> str:
    """Why `messages` may not take `route` ever: it reaches a queue the console drains."""
    try:
        reached, _ = routes.reach_each(vhost, route, lambda: map(routes.headers_of, messages))
    except mgmt.ManagementError:
        return ""  # unknown: the gate (if on) waits; a manual replay would publish too
    drained = routes.drained(vhost, reached or ())
    return f"the route reaches {', '.join(drained)}, which the console drains" if drained else ""


def _replay(policy: RedrivePolicy, vhost: str, batch: list, now: datetime, waits: list) -> int:
    if not batch:
        return 0
    actor = f"policy:{policy.name}"
    try:
        publisher = ConfirmPublisher(settings.DLQ_BROKER_URL, "dlq-redrive", vhost=vhost)
    except (ConnectionError, *amqp.AllErrors) as e:
        log.warning("redrive policy %s: no connection to vhost %s: %s", policy.name, vhost, e)
        waits.append(f"no connection to vhost {vhost!r}: {e}")
        for row, _ in batch:
            _finish(row, next_at=now + GATE_RECHECK)
        return 0
    try:
        claimed = _claimed(policy, publisher, batch, actor, now)
        try:
            outcomes = publisher.publish([o for _, _, o in claimed], timeout=30,
                                         rate_per_s=policy.rate_per_s)  # fmt: skip
        except amqp.AllErrors as e:
            outcomes = {o.key: (Outcome.ERROR, f"publishing failed: {e!r}") for _, _, o in claimed}
        for row, attempt, outgoing in claimed:
            outcome, detail = outcomes[outgoing.key]
            reason = f"redrive policy {policy.name}: attempt {row.attempt + 1}"\
                     f" of {policy.max_attempts}"  # fmt: skip
            message_actions.settle_replay(attempt, outcome, detail, actor, reason)
            _attempted(row, policy, outcome == Outcome.CONFIRMED, now)
    finally:
        publisher.close()
    return len(claimed)


def _claimed(policy, publisher, batch: list, actor: str, now: datetime) -> list:
    """(row, Replay, Outgoing) of each message claimed; one another holds is due again
    soon; one that cannot be replayed (its route, its size) counts as a failed attempt."""
    claimed = []
    for row, message in batch:
        try:
            attempt, outgoing = message_actions.claim_for_replay(
                message.pk, policy.target, actor, publisher
            )
        except Conflict:
            _finish(row, next_at=now + BUSY_RECHECK)
        except ActionError as e:
            log.warning("redrive policy %s cannot replay message %s: %s", policy.name,
                        message.pk, e)  # fmt: skip
            _attempted(row, policy, False, now)
        else:
            claimed.append((row, attempt, outgoing))
    return claimed


def _attempted(row: RedriveDue, policy: RedrivePolicy, confirmed: bool, now: datetime) -> None:
    """One more redrive done: a confirmed one waits for the message to come back (if it
    does, its new row is due then); a failed one is due again after the backoff."""
    row.attempt += 1
    if confirmed:
        row.next_at, row.redriven_at = None, now
    else:
        matching.schedule(row, policy, now)
    row.save(update_fields=["attempt", "next_at", "exhausted", "redriven_at"])


def _finish(row: RedriveDue, next_at) -> None:
    RedriveDue.objects.filter(pk=row.pk).update(next_at=next_at)
