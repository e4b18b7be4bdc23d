"""Alert channels for the UI and `dlq_channel`: create, edit, switch on and off, delete,
send a test alert, list attempts. Secrets go in and never come out: every description of
a channel is masked, and validation errors never repeat the value they reject.

Each mutating function takes the acting user (None for the command line) and requires
the admin role of that user.
"""

import re
from datetime import datetime
from urllib.parse import urlsplit

from django.db import IntegrityError, transaction
from django.utils import timezone

from dlq import audit
from dlq.accounts.roles import ADMIN, require_role
from dlq.alerts import delivery, destinations
from dlq.models import (
    AlertAttempt,
    AlertChannel,
    AlertRule,
    AttemptStatus,
    AuditAction,
    ChannelKind,
    TokenBucket,
)

_TOKEN = re.compile(r"[0-9]{1,20}:[A-Za-z0-9_-]{1,200}")
_CHAT = re.compile(r"-?[0-9]{1,20}|@[A-Za-z][A-Za-z0-9_]{3,63}")
_URL = re.compile(r"https?://[^/\s?#]+(?:[/?#]\S*)?")


class ChannelError(ValueError):
    """Input a channel cannot be made from; the message is safe to show."""


def _check(actor) -> None:
    if actor is not None:
        require_role(actor, ADMIN)


def _audit(actor, change: str, channel: AlertChannel) -> None:
    """Channel changes are operator actions too; the audit row never carries the secret."""
    detail = {"change": change, "channel": channel.name, "kind": channel.kind}
    audit.record(actor or "manage.py", AuditAction.CHANNEL_CHANGE, detail=detail)


def _config(kind: str, url: str = "", token: str = "", chat_id: str = "") -> dict:
    if kind in (ChannelKind.SLACK, ChannelKind.WEBHOOK):
        if not _URL.fullmatch(url or ""):
            raise ChannelError(f"the {kind} URL must be an http:// or https:// URL")
        if "@" in urlsplit(url).netloc:
            # user:password@ would end up in error texts: keep secrets in the path or query
            raise ChannelError(f"the {kind} URL must not carry a user name or password")
        try:
            destinations.check_url(url)
        except (destinations.Refused, ValueError) as e:
            raise ChannelError(str(e) if isinstance(e, destinations.Refused) else
                               f"the {kind} URL has no valid host") from None  # fmt: skip
        return {"url": url}
    if kind == ChannelKind.TELEGRAM:
        if not _TOKEN.fullmatch(token or ""):
            raise ChannelError("the bot token must look like 123456789:AA... (from @BotFather)")
        if not _CHAT.fullmatch(str(chat_id or "")):
            raise ChannelError("the chat id must be a number (e.g. -1001234567890) or @channel")
        return {"token": token, "chat_id": str(chat_id)}
    raise ChannelError(f"unknown channel kind {kind!r}: use slack, telegram or webhook")


def _free_name(kind: str) -> str:
    taken = set(AlertChannel.objects.filter(name__startswith=kind).values_list("name", flat=True))
    candidates = (kind if i == 1 else f"{kind}-{i}" for i in range(1, len(taken) + 2))
    return next(name for name in candidates if name not in taken)


def create_channel(kind: str, name: str = "", *, actor=None, **secrets) -> AlertChannel:
    """secrets: url (slack, webhook) or token and chat_id (telegram)."""
    _check(actor)
    config = _config(kind, **secrets)
    name = (name or "").strip() or _free_name(kind)
    try:
        with transaction.atomic():
            channel = AlertChannel.objects.create(kind=kind, name=name[:100], config=config)
            _audit(actor, "create", channel)
            return channel
    except IntegrityError:
        raise ChannelError(f"a channel named {name!r} exists already") from None


def update_channel(channel: AlertChannel, *, name: str = "", actor=None, **secrets):
    """Rename, or replace the secrets; secrets left empty keep their stored value
    (the form shows them masked, so an untouched field means "unchanged")."""
    _check(actor)
    given = {k: v for k, v in secrets.items() if v}
    if given:
        channel.config = _config(channel.kind, **{**channel.config, **given})
    channel.name = (name or "").strip()[:100] or channel.name
    try:
        with transaction.atomic():
            channel.save()
            _audit(actor, "update secrets" if given else "update", channel)
    except IntegrityError:
        raise ChannelError(f"a channel named {channel.name!r} exists already") from None
    return channel


def set_enabled(channel: AlertChannel, enabled: bool, *, actor=None, reason: str = ""):
    _check(actor)
    channel.enabled = enabled
    channel.disabled_reason = "" if enabled else (reason or "disabled by an admin")
    with transaction.atomic():
        channel.save(update_fields=["enabled", "disabled_reason", "updated_at"])
        _audit(actor, "enable" if enabled else "disable", channel)
    return channel


def delete_channel(channel: AlertChannel, *, actor=None) -> None:
    """Its attempts stay (with the channel's name) so the history still answers."""
    _check(actor)
    with transaction.atomic():
        TokenBucket.objects.filter(key=delivery.bucket_key(channel)).delete()
        _audit(actor, "delete", channel)
        channel.delete()


def send_test(channel: AlertChannel, *, actor=None, max_wait: float = 30.0) -> AlertAttempt:
    """Send a test alert now, retrying briefly; the last attempt (its status tells)."""
    _check(actor)
    now = timezone.now()
    attempt = AlertAttempt.objects.create(
        channel=channel,
        channel_name=channel.name,
        kind="test",
        not_before=now,
        created_at=now,
        summary="test alert",
    )
    return delivery.deliver_now(attempt.id, max_wait=max_wait)


def describe(channel: AlertChannel) -> dict:
    """Everything about a channel that anyone may see: the secret is masked."""
    return {
        "id": channel.pk,
        "name": channel.name,
        "kind": channel.kind,
        "destination": channel.masked,
        "enabled": channel.enabled,
        "disabled_reason": channel.disabled_reason,
        "created_at": channel.created_at,
    }


def list_channels() -> list[dict]:
    return [describe(c) for c in AlertChannel.objects.order_by("name")]


def attempts(channel: AlertChannel | None = None, since: datetime | None = None, limit=100):
    """Delivery attempts, newest first (for the UI's "did the alert go out?")."""
    rows = AlertAttempt.objects.order_by("-id")
    if channel is not None:
        rows = rows.filter(channel=channel)
    if since is not None:
        rows = rows.filter(created_at__gte=since)
    return rows[:limit]


FINISHED = [AttemptStatus.SENT, AttemptStatus.FAILED, AttemptStatus.REJECTED,
            AttemptStatus.RATE_LIMITED, AttemptStatus.SKIPPED]  # fmt: skip
FAILING = {AttemptStatus.FAILED, AttemptStatus.REJECTED}


def last_attempts(channels) -> dict[int, AlertAttempt]:
    """Each channel's latest finished delivery attempt, by channel id: what the channel
    list shows beside "enabled". One indexed query per channel (there are a few)."""
    last = {}
    for channel in channels:
        found = (AlertAttempt.objects.filter(channel=channel, status__in=FINISHED)
                 .order_by("-id").first())  # fmt: skip
        if found is not None:
            last[channel.pk] = found
    return last


def is_failing(channel: AlertChannel, attempt: AlertAttempt | None) -> bool:
    """Its last delivery failed and it still matters: the channel is on, or the failure
    switched it off (an admin's own switch-off is not a failure)."""
    if attempt is None or attempt.status not in FAILING:
        return False
    return channel.enabled or attempt.status == AttemptStatus.REJECTED


def paging() -> dict:
    """Does anyone get paged? For the overview: the channels there are, how many are on,
    whether a rule is on, and each channel whose last delivery failed."""
    channels = list(AlertChannel.objects.order_by("name"))
    last = last_attempts(channels)
    failing = [{"channel": c, "attempt": last[c.pk]} for c in channels
               if is_failing(c, last.get(c.pk))]  # fmt: skip
    return {
        "channels": len(channels),
        "enabled": sum(c.enabled for c in channels),
        "rules": AlertRule.objects.filter(enabled=True).exists(),
        "failing": failing,
    }
