"""Sent alerts as delivery leaves them (a closed digest and a SENT attempt), failure groups
in each state of the alert lifecycle, and chat links: for the alerts API, the Sent alerts
page and the account page."""

from datetime import datetime

from django.utils import timezone

from dlq.alerts import engine
from dlq.alerts.telegram import bots
from dlq.models import (
    AlertAttempt,
    AlertChannel,
    AlertDigest,
    AttemptStatus,
    ChannelKind,
    GroupTriage,
    Message,
    Status,
    TelegramBot,
)
from tests.factories import make_messages

BOT_TOKEN = "123456789:AAH-sentalerts-test-token_42"


def failure_group(name: str, count: int = 2, *, status: str = Status.PARKED) -> str:
    """A failure group of `count` messages that died in the work queue `name` (each name
    its own group); `status` other than parked: all of them replayed, say (resolved)."""
    stored = make_messages(count, queue=f"{name}.dlq", died_in=name, routing_key=name,
                           headers={"x-exception-message": f"{name} failed"})  # fmt: skip
    group = stored[0].group
    if status != Status.PARKED:
        Message.objects.filter(group=group).update(status=status)
    return group


def acknowledge(group: str, user, at: datetime | None = None) -> None:
    GroupTriage.objects.update_or_create(group=group, defaults={
        "owner": user, "owned_at": at or timezone.now()})  # fmt: skip


def sent_alert(groups: dict[str, int], *, channel: str = "oncall", at: datetime | None = None,
               status: str = AttemptStatus.SENT, kind: str = "digest") -> AlertAttempt:  # fmt: skip
    """An alert naming `groups` (group: count) that reached the Slack channel `channel`."""
    at = at or timezone.now()
    slack = {"kind": ChannelKind.SLACK, "config": {"url": "https://hooks.slack.example/T/B/x"}}
    to, _ = AlertChannel.objects.get_or_create(name=channel, defaults=slack)
    rule = engine.ensure_default_rule()
    said = {g: {"count": n, "queue": "orders.dlq", "vhost": "/", "exception_type": "",
                "reason": "rejected", "failed_queue": "orders", "message_type": ""}
            for g, n in groups.items()}  # fmt: skip
    digest = AlertDigest.objects.create(
        rule=rule, opened_at=at, first_id=1, last_id=1, first_received_at=at,
        last_received_at=at, count=sum(groups.values()), groups=said, triggered_at=at,
        sent_at=at, reason="digest")  # fmt: skip
    return AlertAttempt.objects.create(
        channel=to, channel_name=to.name, rule=rule, digest=digest, kind=kind, status=status,
        not_before=at, created_at=at, started_at=at, finished_at=at, http_status=200)  # fmt: skip


def telegram_bot(username: str = "dlq_test_bot", token: str = BOT_TOKEN) -> TelegramBot:
    """A bot getMe has named, used by an enabled Telegram channel (its key is the token's)."""
    AlertChannel.objects.create(kind=ChannelKind.TELEGRAM, name=f"tg-{username}",
                                config={"token": token, "chat_id": "-1001"})  # fmt: skip
    return TelegramBot.objects.create(key=bots.bot_key(token), username=username)
