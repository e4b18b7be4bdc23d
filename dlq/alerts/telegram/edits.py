"""Sent Telegram alerts edited to show what their groups are now: after a press that did
something, and (a beat pass) whenever a group's state changed from what its message shows:
an owner set in the console, a group resolved because nothing of it is parked any more.

An alert is re-rendered from its attempt (the digest it sent, the buttons it has), and the
states it shows are stored once Telegram took the edit (or refused it for good: a message
deleted from the chat is not edited again)."""

from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from dlq.alerts import chat, lifecycle, texts
from dlq.alerts.telegram import api, render
from dlq.models import AlertAttempt

EDIT_FOR = timedelta(days=7)  # older alerts are left as they are


def call_for(attempt: AlertAttempt) -> api.Call | None:
    """The edit showing `attempt`'s groups as they are now; None when it cannot be edited
    (its digest or channel deleted), which is then not looked at again."""
    where = attempt.chat_message or {}
    token = str(((attempt.channel.config or {}) if attempt.channel else {}).get("token") or "")
    if (
        attempt.digest is None
        or not token
        or not where.get("chat_id")
        or not where.get("message_id")
    ):
        _show(attempt.pk, lifecycle.shown(attempt))
        return None
    alert = texts.compose(attempt.digest)
    chat.add_buttons(attempt, alert)
    states = chat.shown_states(alert)
    payload = {"chat_id": where["chat_id"], "message_id": where["message_id"],
               **render.message(alert)}  # fmt: skip
    return api.Call(token, "editMessageText", payload, lambda: _show(attempt.pk, states))


def _show(attempt_id: int, states: dict) -> None:
    AlertAttempt.objects.filter(pk=attempt_id).update(shown_states=states)


def edit_stale(now: datetime | None = None) -> int:
    """Edit each recent Telegram alert whose groups' states changed; how many were tried."""
    since = (now or timezone.now()) - EDIT_FOR
    stale = lifecycle.stale_chat_alerts("telegram", since)
    calls = [call for attempt in stale if (call := call_for(attempt)) is not None]
    api.make(settings.DLQ_TELEGRAM_API_URL, calls)
    return len(calls)
