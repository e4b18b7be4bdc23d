"""Alert rules evaluated from what the drainer stored: digests, not storms.

Runs outside the drain's transactions (a Celery beat task, dlq/tasks/alerts.py), so a slow or
failing channel never touches draining. One pass (`evaluate`):

1. Settle the arrival horizon: the highest Message id below which every id is committed
   or will never be (ids are taken before commit, so a batch still committing can leave a
   hole below one already visible; a hole older than GAP_GRACE is a rolled-back insert).
2. Record failure groups seen for the first time (KnownGroup).
3. For each enabled rule, fold the arrivals between its cursor and the horizon into its
   open digest (exact counts per queue, group and minute, skipping muted queues and groups)
   and move the cursor. Each id range is counted once, so counts are exact however the
   drainer batched the arrivals.
4. A digest is due when the rule's threshold is met (N arrivals within M minutes) and the
   last alert of the rule is at least `digest_minutes` old, or at once when it holds a
   failure group never seen before; never during quiet hours (it waits, then goes out).
   A group on hold is left out until the hold ends, then named (dlq/alerts/holds.py).
   A due digest is closed and one attempt per channel is queued; dlq/alerts/delivery.py sends.
"""

import logging
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.db import connection, transaction
from django.db.models import Count, Exists, Max, Min, OuterRef, Q
from django.db.models.functions import TruncMinute
from django.utils import timezone

from dlq.alerts import holds
from dlq.alerts.patterns import default_vhost, patterns_of, queue_key
from dlq.broker import names
from dlq.groups import triage
from dlq.models import (
    AlertAttempt,
    AlertChannel,
    AlertDigest,
    AlertRule,
    ArrivalHorizon,
    KnownGroup,
    Message,
    Mute,
)
from dlq.models.redrive import PolicyState, RedrivePolicy

log = logging.getLogger("dlq.alerts")

GAP_GRACE = timedelta(seconds=30)  # far longer than any drain batch takes to commit
MAX_GROUPS = 500  # distinct groups a digest itemises; arrivals of the rest are still counted
DEFAULT_RULE = "all drained queues"
EVERY_QUEUE = "*/*"  # every queue of every vhost (a bare * is the default vhost's)
_GROUP_FIELDS = (
    "vhost", "queue", "group", "exception_type", "death_reason", "failed_queue", "message_type"
)  # fmt: skip


# --- the arrival horizon ----------------------------------------------------------------


def _last_allocated_id() -> int:
    """The highest Message id handed out so far, committed or not: where alerts start."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_sequence_last_value(pg_get_serial_sequence(%s, 'id'))",
                [Message._meta.db_table],
            )
            value = cursor.fetchone()[0]
        return value or 0
    return Message.objects.aggregate(top=Max("id"))["top"] or 0


def _claim_horizon() -> ArrivalHorizon | None:
    """Lock the horizon row; None while another evaluation holds it (so passes never overlap)."""
    if not ArrivalHorizon.objects.filter(id=1).exists():
        ArrivalHorizon.objects.get_or_create(id=1, defaults={"safe_id": _last_allocated_id()})
    return ArrivalHorizon.objects.select_for_update(skip_locked=True).filter(id=1).first()


def _island_end(safe_id: int) -> int:
    """The end of the run of consecutive ids just after safe_id (safe_id if there is none)."""
    if not Message.objects.filter(id=safe_id + 1).exists():
        return safe_id
    has_next = Message.objects.filter(id=OuterRef("id") + 1)
    ends = Message.objects.filter(id__gt=safe_id).exclude(Exists(has_next))
    return ends.aggregate(end=Min("id"))["end"]


def _settle(horizon: ArrivalHorizon, now: datetime) -> None:
    top = Message.objects.aggregate(top=Max("id"))["top"] or 0
    watched_long = horizon.watch_since and now - horizon.watch_since >= GAP_GRACE
    if watched_long:
        # Every id below watch_top was handed out before it was seen: its insert has had
        # GAP_GRACE to commit, so a hole there now is a rollback or a deleted row.
        horizon.safe_id = max(horizon.safe_id, horizon.watch_top)
    horizon.safe_id = _island_end(horizon.safe_id)
    if watched_long or horizon.safe_id >= (horizon.watch_top or 0) or horizon.safe_id >= top:
        horizon.watch_top = horizon.watch_since = None
    if horizon.safe_id < top and horizon.watch_since is None:
        horizon.watch_top, horizon.watch_since = top, now


def _record_groups(start: int, end: int, now: datetime) -> None:
    if end <= start:
        return
    firsts = (
        Message.objects.filter(id__gt=start, id__lte=end)
        .values("group")
        .annotate(first=Min("id"))
        .order_by()
    )
    KnownGroup.objects.bulk_create(
        [KnownGroup(group=f["group"], first_id=f["first"], first_seen_at=now) for f in firsts],
        ignore_conflicts=True,
    )


# --- one rule ---------------------------------------------------------------------------


def _among(keys: list[tuple[str, str]]) -> Q:
    """Rows in any of these (vhost, queue): one IN list per vhost."""
    per_vhost: dict[str, list[str]] = {}
    for vhost, queue in keys:
        per_vhost.setdefault(vhost, []).append(queue)
    condition = Q(pk__in=[])
    for vhost, queues in per_vhost.items():
        condition |= Q(vhost=vhost, queue__in=queues)
    return condition


def _arrivals(rule: AlertRule, span, mutes: list[Mute]):
    """The rule's unmuted arrivals among `span`; None if there are none."""
    seen = set(span.values_list("vhost", "queue").distinct().order_by())
    default = default_vhost()
    wanted = patterns_of(rule.patterns, default)
    muted = patterns_of([m.queue for m in mutes if not m.group], default)
    keys = sorted(
        key for key in seen if names.matches(wanted, *key) and not names.matches(muted, *key)
    )
    if not keys:
        return None
    rows = span.filter(_among(keys))
    for policy in RedrivePolicy.objects.filter(state=PolicyState.ACTIVE, enabled=True):
        rows = rows.exclude(policy.will_redrive())  # alerted once it is exhausted
    for mute in (m for m in mutes if m.group):
        if not mute.queue:
            rows = rows.exclude(group=mute.group)
            continue
        scoped = patterns_of([mute.queue], default)
        scope = [key for key in keys if names.matches(scoped, *key)]
        if scope:
            rows = rows.exclude(Q(group=mute.group) & _among(scope))
    return rows


def _fold(digest: AlertDigest, rows, rule: AlertRule, now: datetime) -> bool:
    """Add the arrivals to the digest; False when there were none."""
    stats = list(
        rows.values(*_GROUP_FIELDS)
        .annotate(n=Count("id"), first=Min("id"), last=Max("id"))
        .annotate(since=Min("received_at"), until=Max("received_at"))
        .order_by()
    )
    if not stats:
        return False
    known = KnownGroup.objects.filter(group__in={s["group"] for s in stats})
    new = set(known.filter(first_id__gt=rule.cursor).values_list("group", flat=True))
    for s in stats:
        _add(digest, s, s["group"] in new)
    minutes = rows.annotate(m=TruncMinute("received_at")).values("m").annotate(n=Count("id"))
    for bucket in minutes.order_by():
        key = bucket["m"].astimezone(UTC).strftime("%Y-%m-%dT%H:%M")
        digest.minutes[key] = digest.minutes.get(key, 0) + bucket["n"]
    return True


def _add(digest: AlertDigest, s: dict, new: bool) -> None:
    digest.count += s["n"]
    digest.first_id = min(digest.first_id or s["first"], s["first"])
    digest.last_id = max(digest.last_id or 0, s["last"])
    digest.first_received_at = min(digest.first_received_at or s["since"], s["since"])
    digest.last_received_at = max(digest.last_received_at or s["until"], s["until"])
    key = queue_key(s["vhost"], s["queue"])
    digest.queues[key] = digest.queues.get(key, 0) + s["n"]
    group = digest.groups.get(s["group"])
    if group is None and len(digest.groups) >= MAX_GROUPS:
        digest.other_groups += s["n"]
        return
    if group is None:
        group = digest.groups[s["group"]] = {"count": 0, "queue": s["queue"]}
        group.update(
            exception_type=s["exception_type"],
            reason=s["death_reason"],
            failed_queue=s["failed_queue"],
            message_type=s["message_type"],
            vhost=s["vhost"],  # one: a group never spans vhosts (its id holds the vhost)
        )
    group["count"] += s["n"]
    if new and s["group"] not in digest.new_groups:
        digest.new_groups.append(s["group"])


def in_quiet_hours(rule: AlertRule, now: datetime) -> bool:
    start, end = rule.quiet_start, rule.quiet_end
    if start is None or end is None or start == end:
        return False
    try:
        local = now.astimezone(ZoneInfo(rule.quiet_tz)).time()
    except (ZoneInfoNotFoundError, ValueError):
        local = now.astimezone(UTC).time()
    return start <= local < end if start < end else local >= start or local < end


def _busiest_window(digest: AlertDigest, rule: AlertRule) -> int:
    """The most arrivals within any `window_minutes` consecutive minutes of the digest's,
    by when they were received: a burst counts whenever it is evaluated (a pass just after
    the minute turned, or after beat was down, still sees the minutes it came in)."""
    width = timedelta(minutes=rule.window_minutes - 1)
    minutes = sorted((datetime.fromisoformat(k), n) for k, n in digest.minutes.items())
    busiest = total = start = 0
    for minute, n in minutes:
        total += n
        while minutes[start][0] < minute - width:
            total -= minutes[start][1]
            start += 1
        busiest = max(busiest, total)
    return busiest


def _forget_old_minutes(digest: AlertDigest, rule: AlertRule, now: datetime) -> None:
    """Minutes that no arrival from now on can share a window with (once tested)."""
    oldest = (now - timedelta(minutes=rule.window_minutes - 1)).astimezone(UTC)
    oldest_key = oldest.strftime("%Y-%m-%dT%H:%M")
    digest.minutes = {k: n for k, n in digest.minutes.items() if k >= oldest_key}


def _due(rule: AlertRule, digest: AlertDigest, now: datetime) -> str | None:
    """Why the digest goes out now ("new_group" or "digest"), or None."""
    if not digest.triggered_at and _busiest_window(digest, rule) >= rule.threshold:
        digest.triggered_at = now
    _forget_old_minutes(digest, rule, now)
    if in_quiet_hours(rule, now):
        return None
    if rule.alert_new_groups and digest.new_groups:
        return "new_group"
    interval = timedelta(minutes=rule.digest_minutes)
    if digest.triggered_at and (not rule.last_sent_at or now - rule.last_sent_at >= interval):
        return "digest"
    return None


def _release(rule: AlertRule, digest, end: int, mutes: list, held: list, now: datetime):
    """Fold what arrived during the holds that ended into the digest, which then goes out."""
    released = [hold for hold in held if hold.held_to <= now]
    span = holds.released_span(released, end)
    rows = _arrivals(rule, span, mutes) if span is not None else None
    if rows is None:
        return digest
    fresh = digest or AlertDigest(rule=rule, opened_at=now, first_id=0, last_id=0)
    counted = dict(rows.values_list("group").annotate(n=Count("id")).order_by())
    if not counted or not _fold(fresh, rows, rule, now):
        return digest
    holds.mark(fresh, released, counted)
    fresh.triggered_at = fresh.triggered_at or now
    return fresh


def _stale(rule: AlertRule, digest: AlertDigest) -> bool:
    """Arrivals that stayed below the threshold for a whole window never alert."""
    waiting_groups = rule.alert_new_groups and digest.new_groups
    return not digest.triggered_at and not digest.minutes and not waiting_groups


def rule_channels(rule: AlertRule) -> list[AlertChannel]:
    channels = AlertChannel.objects.filter(enabled=True).order_by("id")
    return list(channels if rule.all_channels else channels.filter(rules=rule))


def summary(digest: AlertDigest) -> str:
    text = f"{digest.count} new in {len(digest.queues)} queues"
    return text + (f"; {len(digest.new_groups)} new groups" if digest.new_groups else "")


def _dispatch(rule: AlertRule, digest: AlertDigest, reason: str, now: datetime) -> list:
    digest.sent_at, digest.reason = now, reason
    digest.save()
    rule.last_sent_at = now
    attempts = [
        AlertAttempt(
            channel=channel,
            channel_name=channel.name,
            rule=rule,
            digest=digest,
            kind=reason,
            not_before=now,
            created_at=now,
            summary=summary(digest)[:255],
        )
        for channel in rule_channels(rule)
    ]
    return AlertAttempt.objects.bulk_create(attempts)


def _drop(digest: AlertDigest) -> None:
    if digest.pk:
        digest.delete()


def _evaluate_rule(rule: AlertRule, end: int, mutes: list[Mute], held: list, now: datetime):
    digest = AlertDigest.objects.filter(rule=rule, sent_at__isnull=True).first()
    span = Message.objects.filter(id__gt=rule.cursor, id__lte=end)
    rows = _arrivals(rule, span, mutes) if end > rule.cursor else None
    if rows is not None:
        fresh = digest or AlertDigest(rule=rule, opened_at=now, first_id=0, last_id=0)
        if _fold(fresh, holds.without_held(rows, held), rule, now):
            digest = fresh
    digest = _release(rule, digest, end, mutes, held, now)
    rule.cursor = max(rule.cursor, end)
    attempts = []
    if digest is not None:
        reason = _due(rule, digest, now)
        if reason:
            attempts = _dispatch(rule, digest, reason, now)
        if reason is None and _stale(rule, digest):
            _drop(digest)
        else:
            digest.save()
    rule.save(update_fields=["cursor", "last_sent_at"])
    return attempts


# --- a pass over every rule ---------------------------------------------------------------


def evaluate(now: datetime | None = None) -> list[int]:
    """One evaluation pass; the ids of the attempts it queued (dlq/alerts/delivery.py sends
    them)."""
    now = now or timezone.now()
    queued: list[AlertAttempt] = []
    with transaction.atomic():
        horizon = _claim_horizon()
        if horizon is None:
            return []  # another pass is running; it will count these arrivals
        start = horizon.safe_id
        _settle(horizon, now)
        horizon.save()
        _record_groups(start, horizon.safe_id, now)
        mutes = list(Mute.objects.filter(until__gt=now))
        held = triage.holds()
        AlertRule.objects.filter(enabled=False).update(cursor=horizon.safe_id)
        AlertDigest.objects.filter(rule__enabled=False, sent_at__isnull=True).delete()
        for rule in AlertRule.objects.filter(enabled=True).order_by("id"):
            queued += _evaluate_rule_safely(rule, horizon.safe_id, mutes, held, now)
        triage.forget([hold for hold in held if hold.held_to <= now])
    if queued:
        log.info("alerts queued", extra={"attempts": len(queued), "horizon": horizon.safe_id})
    return [a.id for a in queued]


def _evaluate_rule_safely(rule, end, mutes, held, now) -> list:
    # One broken rule must not hold the others back; its cursor stays, so once the cause
    # is fixed it catches up with exact counts.
    try:
        with transaction.atomic():
            return _evaluate_rule(rule, end, mutes, held, now)
    except Exception:
        log.exception("alert rule failed", extra={"rule": rule.name})
        return []


# --- rules and mutes, for the UI and the commands ------------------------------------------


def horizon_id() -> int:
    horizon = ArrivalHorizon.objects.filter(id=1).first()
    return horizon.safe_id if horizon else _last_allocated_id()


def reset_horizon() -> int:
    """Count arrivals from now on: what is stored so far becomes history for every rule
    (after a restore from backup, and before each test)."""
    start = _last_allocated_id()
    ArrivalHorizon.objects.update_or_create(
        id=1, defaults={"safe_id": start, "watch_top": None, "watch_since": None}
    )
    AlertRule.objects.update(cursor=start)
    AlertDigest.objects.filter(sent_at__isnull=True).delete()
    _record_groups(0, start, timezone.now())  # history's groups are not news either
    return start


def create_rule(name: str, channels=(), **fields) -> AlertRule:
    """A new rule counts arrivals from now on, not the history already stored."""
    rule = AlertRule.objects.create(name=name, cursor=horizon_id(), **fields)
    rule.channels.set(channels)
    return rule


def ensure_default_rule() -> AlertRule:
    """The out-of-the-box rule (the migration creates it): every drained queue, every
    channel, any arrival, one digest per 15 minutes, new failure groups at once."""
    rule = AlertRule.objects.filter(name=DEFAULT_RULE).first()
    return rule or create_rule(DEFAULT_RULE, queues=EVERY_QUEUE, all_channels=True)
