"""The demo's sent alert: once the drainer has stored the demo's messages, one digest of
their biggest failure groups "sent" to a disabled demo webhook channel, written straight
into the tables (nothing goes over the network), so the Sent alerts page of a fresh demo
shows groups to acknowledge, mute or canary."""

from django.db import transaction
from django.db.models import Max, Min
from django.utils import timezone

from dlq.alerts import engine, patterns
from dlq.groups import worklist
from dlq.models import AlertAttempt, AlertChannel, AlertDigest, AttemptStatus, ChannelKind, Message

CHANNEL = "demo"
GROUPS = 4
WHY = "the demo's channel: its alert was written by the demo, nothing is ever sent to it"


def leave_alert() -> AlertAttempt | None:
    """The demo's sent alert, made from the groups parked now; None while none is."""
    groups, _ = worklist.listed(limit=GROUPS)
    groups = [g for g in groups if g["parked"]]
    if not groups:
        return None
    now = timezone.now()
    stored = Message.objects.filter(group__in=[g["id"] for g in groups])
    span = stored.aggregate(first=Min("id"), last=Max("id"), since=Min("received_at"),
                            until=Max("received_at"))  # fmt: skip
    with transaction.atomic():
        channel = _channel()
        digest = AlertDigest.objects.create(
            rule=engine.ensure_default_rule(), opened_at=now, first_id=span["first"],
            last_id=span["last"], first_received_at=span["since"], last_received_at=span["until"],
            count=sum(g["parked"] for g in groups), queues=_queues(groups),
            groups={g["id"]: _said(g) for g in groups}, new_groups=[g["id"] for g in groups],
            triggered_at=now, sent_at=now, reason="new_group",
        )  # fmt: skip
        return AlertAttempt.objects.create(
            channel=channel, channel_name=channel.name, rule=digest.rule, digest=digest,
            kind="new_group", status=AttemptStatus.SENT, not_before=now, created_at=now,
            started_at=now, finished_at=now, http_status=200, summary="the demo's alert",
        )  # fmt: skip


def _channel() -> AlertChannel:
    channel, _ = AlertChannel.objects.get_or_create(
        name=CHANNEL,
        defaults={"kind": ChannelKind.WEBHOOK, "enabled": False, "disabled_reason": WHY,
                  "config": {"url": "https://alerts.example.invalid/demo"}},
    )  # fmt: skip
    return channel


def _queues(groups: list[dict]) -> dict:
    queues = {}
    for g in groups:
        for q in g["queues"][:1]:
            key = patterns.queue_key(q["vhost"], q["queue"])
            queues[key] = queues.get(key, 0) + g["parked"]
    return queues


def _said(group: dict) -> dict:
    """What the engine keeps of a group in a digest (dlq/alerts/engine.py, _add)."""
    queue = group["queues"][0] if group["queues"] else {"vhost": "/", "queue": ""}
    return {"count": group["parked"], "queue": queue["queue"], "vhost": queue["vhost"],
            "exception_type": group["exception_type"], "reason": "", "failed_queue": "",
            "message_type": group["message_type"]}  # fmt: skip
