"""Telegram alerts sent to the Bot API stand-in (tests/telegramapi.py), and the people who
press their buttons."""

from dlq.alerts import delivery, engine
from dlq.models import AlertAttempt, AlertChannel, ChatLink
from tests.alertfactory import arrive
from tests.factories import make_user

TOKEN = "123456:SECRET-bot-token-abcdef"
CHAT = "-1001"


def telegram_channel(name: str = "ops-telegram", token: str = TOKEN) -> AlertChannel:
    return AlertChannel.objects.create(kind="telegram", name=name,
                                       config={"token": token, "chat_id": CHAT})  # fmt: skip


def linked(role: str, telegram_id: int, username: str = ""):
    """A console user holding `role`, linked to the Telegram user `telegram_id`."""
    user = make_user(role)
    if username:
        user.username = username
        user.save()
    ChatLink.objects.create(user=user, via="telegram", chat_user=str(telegram_id))
    return user


def alert_now(queue: str = "orders.dlq", count: int = 3, **arrival) -> AlertAttempt:
    """Arrivals of a new failure group, alerted and delivered in this process; the attempt
    that reached the Telegram channel."""
    arrive(queue, count, **arrival)
    for attempt_id in engine.evaluate():
        delivery.deliver_now(attempt_id)
    return AlertAttempt.objects.filter(channel__kind="telegram", status="sent").latest("id")


def keyboard(call) -> list[list[dict]]:
    return call.payload.get("reply_markup", {}).get("inline_keyboard", [])


def button(call, row: int, label: str) -> dict:
    """The button of group `row` (1, 2, ...) whose label ends with `label`."""
    return next(b for b in keyboard(call)[row - 1] if b["text"].endswith(label))
