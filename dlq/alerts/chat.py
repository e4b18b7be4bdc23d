"""What Slack and Telegram alerts share beyond their text: the buttons of each group (when
presses can reach the console), and what a sent one shows, so it can be updated."""

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from dlq.alerts import lifecycle, presses, texts
from dlq.alerts.formats import Alert
from dlq.models import AlertAttempt, ChannelKind, ChatDelivery

DELIVERIES_KEPT = timedelta(days=1)


def actionable(kind: str) -> bool:
    """Whether an alert to this kind of channel carries buttons: Slack's need the signing
    secret to verify a press, Telegram's a way for presses to arrive."""
    if kind == ChannelKind.SLACK:
        return bool(settings.DLQ_SLACK_SIGNING_SECRET)
    if kind == ChannelKind.TELEGRAM:
        return settings.DLQ_TELEGRAM_UPDATES != "off"
    return False


def add_buttons(attempt: AlertAttempt, alert: Alert) -> None:
    """Each listed group's button reference, current state and owner, in `alert`'s items."""
    groups = [item.data["group"] for item in alert.groups if item.data.get("group")]
    refs = presses.buttons_for(attempt, groups)
    now = lifecycle.states(groups)
    for item in alert.groups:
        group = item.data.get("group")
        item.ref, item.state = refs.get(group, ""), now[group]["state"] if group else ""
        item.page = texts.console_url(f"groups/{group}/") if group else ""
        item.owner = (now[group]["acknowledged_by"] or "") if group else ""
        if group:  # who, for an alert that says "acknowledged by NAME"
            item.data["acknowledged_by"] = now[group]["acknowledged_by"]


def shown_states(alert: Alert) -> dict[str, str]:
    """What `alert` (with add_buttons' states) shows of each group it has buttons for."""
    return {i.data["group"]: lifecycle.shown_as(i.state, i.owner) for i in alert.groups if i.ref}


def remember(attempt: AlertAttempt, alert: Alert, answer: dict | None) -> None:
    """Store the states the sent alert shows, and where a Telegram message is."""
    attempt.shown_states = shown_states(alert)
    result = (answer or {}).get("result") if isinstance(answer, dict) else None
    if isinstance(result, dict) and isinstance(result.get("chat"), dict):
        attempt.chat_message = {"chat_id": result["chat"].get("id"),
                                "message_id": result.get("message_id")}  # fmt: skip
    attempt.save(update_fields=["shown_states", "chat_message"])


def forget_deliveries() -> int:
    """Drop the chat deliveries taken over a day ago: Slack refuses a request that old by
    its timestamp, and Telegram redelivers an update for a day at most."""
    old = ChatDelivery.objects.filter(seen_at__lt=timezone.now() - DELIVERIES_KEPT)
    return old.delete()[0]
