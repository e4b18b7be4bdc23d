"""Delivering queued alert attempts, one try per row.

An attempt is claimed with a conditional UPDATE (queued -> sending), so two workers never
send the same one; its row is committed before the request goes out and updated with the
outcome. A transient failure queues the next try (bounded, honouring Retry-After); a
permanent one switches the channel off with the reason. A token bucket per channel keeps a
storm from flooding it. Nothing here raises into the caller because a channel failed.
"""

import logging
import time
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.utils import timezone

from dlq.alerts import chat, destinations, texts
from dlq.alerts.transports import HttpNotifier, TransportError, notifier_for, retry_delay
from dlq.models import AlertAttempt, AlertChannel, AttemptStatus, TokenBucket

log = logging.getLogger("dlq.delivery")

CHANNEL_BURST = 10  # alerts a channel may get at once...
CHANNEL_REFILL_S = 600  # ...then one a minute: the bucket refills in ten minutes
OVERDUE = timedelta(seconds=60)  # a queued attempt this late lost its task: queue it again
# An attempt still `sending` this long after it began lost its worker mid-request (a send
# gives up after TIMEOUT_S): it is queued again, and may reach the channel twice.
STUCK = timedelta(minutes=5)


def bucket_key(channel: AlertChannel) -> str:
    return f"channel-{channel.pk}"


def authorize_channel(channel: AlertChannel, now: datetime) -> bool:
    return TokenBucket.take(bucket_key(channel), CHANNEL_BURST, CHANNEL_REFILL_S, now)


def notifier(channel: AlertChannel) -> HttpNotifier:
    return notifier_for(
        channel.kind, channel.config, settings.DLQ_TELEGRAM_API_URL, destinations.pinned_address
    )


def _claim(attempt_id: int, now: datetime) -> AlertAttempt | None:
    claimed = AlertAttempt.objects.filter(
        id=attempt_id, status=AttemptStatus.QUEUED, not_before__lte=now
    ).update(status=AttemptStatus.SENDING, started_at=now)
    if not claimed:
        return None
    return AlertAttempt.objects.select_related("channel", "digest__rule").get(id=attempt_id)


def _finish(attempt: AlertAttempt, status: str, error: str = "", http_status=None) -> None:
    attempt.status, attempt.error, attempt.http_status = status, error[:2000], http_status
    attempt.finished_at = timezone.now()
    attempt.save(update_fields=["status", "error", "http_status", "finished_at"])
    level = logging.INFO if status == AttemptStatus.SENT else logging.WARNING
    log.log(
        level,
        f"alert {status}",
        extra={
            "attempt": attempt.pk,
            "channel": attempt.channel_name,
            "kind": attempt.kind,
            "try": attempt.try_no,
            "http_status": http_status,
            "error": error[:300],
        },
    )


def _switch_off(channel: AlertChannel, error: str, now: datetime) -> None:
    reason = f"{now:%Y-%m-%d %H:%M} UTC: {error}"[:2000]
    AlertChannel.objects.filter(pk=channel.pk).update(
        enabled=False, disabled_reason=reason, updated_at=now
    )
    log.warning("alert channel disabled", extra={"channel": channel.name, "reason": error})


def _next_try(attempt: AlertAttempt, wait: float, now: datetime) -> AlertAttempt:
    return AlertAttempt.objects.create(
        channel=attempt.channel,
        channel_name=attempt.channel_name,
        rule=attempt.rule,
        digest=attempt.digest,
        kind=attempt.kind,
        try_no=attempt.try_no + 1,
        not_before=now + timedelta(seconds=wait),
        created_at=now,
        summary=attempt.summary,
    )


def _failed(attempt: AlertAttempt, error: TransportError, now: datetime):
    status = AttemptStatus.REJECTED if error.permanent else AttemptStatus.FAILED
    _finish(attempt, status, str(error), error.status)
    if error.permanent:
        _switch_off(attempt.channel, str(error), now)
        return None
    wait = retry_delay(error, attempt.try_no)
    return None if wait is None else _next_try(attempt, wait, now)


def _send(attempt: AlertAttempt, now: datetime) -> AlertAttempt | None:
    channel = attempt.channel
    if channel is None or not channel.enabled:
        _finish(attempt, AttemptStatus.SKIPPED, "the channel was disabled or deleted")
        return None
    if attempt.kind not in ("test", "drainer", "policy") and attempt.digest is None:
        _finish(attempt, AttemptStatus.SKIPPED, "the digest was deleted")
        return None
    if not authorize_channel(channel, now):
        _finish(attempt, AttemptStatus.RATE_LIMITED, "too many alerts for this channel")
        return None
    alert = _compose(attempt)
    if attempt.digest is not None and chat.actionable(channel.kind):
        chat.add_buttons(attempt, alert)
    sender = notifier(channel)
    try:
        status = sender.send(alert)
    except TransportError as e:
        return _failed(attempt, e, now)
    if alert.groups and any(item.ref for item in alert.groups):
        chat.remember(attempt, alert, getattr(sender, "answer", None))
    _finish(attempt, AttemptStatus.SENT, http_status=status)
    return None


def _compose(attempt: AlertAttempt):
    if attempt.kind == "test":
        return texts.check_alert()
    if attempt.kind == "drainer":
        return texts.drainer_alert(attempt.summary)
    if attempt.kind == "policy":
        return texts.policy_alert(attempt.summary)
    return texts.compose(attempt.digest)


def deliver_attempt(attempt_id: int, now: datetime | None = None) -> AlertAttempt | None:
    """Make one queued attempt; the next try (queued for later) when one is due, else None."""
    now = now or timezone.now()
    attempt = _claim(attempt_id, now)
    if attempt is None:
        return None  # sent, being sent, or not due yet
    try:
        return _send(attempt, now)
    except Exception as e:
        # A bug or bad stored config must not crash the caller (the beat task, the CLI).
        # The message is scrubbed: the exception may carry a channel's URL or token.
        error = _scrubbed(attempt.channel, f"{type(e).__name__}: {e}")
        _finish(attempt, AttemptStatus.FAILED, f"internal error: {error}")
        return None


def _scrubbed(channel: AlertChannel | None, text: str) -> str:
    """`text` without the channel's secrets (whole values, and a URL's path and query)."""
    secrets = []
    for value in (channel.config or {}).values() if channel else ():
        parts = urlsplit(str(value))
        secrets += [str(value), parts.path, parts.query]
    for secret in sorted((s for s in secrets if len(s) >= 8), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def deliver_now(attempt_id: int, max_wait: float = 60.0, sleep=time.sleep) -> AlertAttempt:
    """Deliver an attempt and its retries in this process (the CLI, tests); the last try.

    A retry asked for later than `max_wait` stays queued for the worker (see `overdue`).
    """
    attempt = AlertAttempt.objects.get(id=attempt_id)
    while True:
        wait = (attempt.not_before - timezone.now()).total_seconds()
        if wait > max_wait:
            return attempt
        if wait > 0:
            sleep(wait)
        following = deliver_attempt(attempt.id)
        if following is None:
            return AlertAttempt.objects.get(id=attempt.id)
        attempt = following


def overdue(now: datetime | None = None) -> list[int]:
    """Queued attempts whose task was lost (worker crash, broker hiccup), and attempts whose
    worker died while sending them: send them again."""
    now = now or timezone.now()
    stuck = AlertAttempt.objects.filter(status=AttemptStatus.SENDING, started_at__lte=now - STUCK)
    stuck.update(status=AttemptStatus.QUEUED, error="its worker stopped while sending it")
    late = now - OVERDUE
    queued = AlertAttempt.objects.filter(status=AttemptStatus.QUEUED, not_before__lte=late)
    return list(queued.order_by("id").values_list("id", flat=True)[:500])
