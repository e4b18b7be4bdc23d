"""Presses and `/start` messages fetched with getUpdates (DLQ_TELEGRAM_UPDATES=poll, the
default), a short long poll per bot on each beat tick.

One poller per bot at a time: a poll holds its bot's TelegramBot row (FOR UPDATE SKIP
LOCKED) from getUpdates to its commit, and another worker's poll skips that bot. Each update
is taken in a savepoint and the bot's offset (update_id + 1) saved with it, committed before
any answer goes to Telegram: a worker killed at any point neither loses a press (Telegram
keeps an update until a getUpdates with a higher offset confirms it) nor repeats one (the
offset, and ChatDelivery, say it was taken).

A bot that cannot be polled says why in its `problem` (shown on the channels page), logged
once when it starts and once when it is over; it is tried again after BACKOFF. 409 Conflict
means a webhook is set for the bot (another console, or DLQ_TELEGRAM_UPDATES=webhook once)."""

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from dlq.alerts.telegram import api, bots, updates
from dlq.models import TelegramBot

log = logging.getLogger("dlq.telegram")

# getUpdates' long poll. It holds one of the worker's slots (and its bot's row) while it
# waits: 2 s of beat's 5 s leaves the slots to jobs and alerts, and a press waits 3 s at most.
WAIT_S = 2
UPDATES_LIMIT = 10  # per getUpdates: well within the answer's size read (api.BotApi.max_body)
BACKOFF = timedelta(seconds=30)
CONFLICT = (
    "Telegram refuses getUpdates for this bot: a webhook is set for it (409 Conflict). "
    "Delete that webhook, or set DLQ_TELEGRAM_UPDATES=webhook on this console."
)


def poll_all(start_job: updates.StartJob = None) -> int:
    """One poll of each bot the enabled Telegram channels use; the updates taken."""
    taken = 0
    for key, token in bots.tokens().items():
        try:
            taken += poll_once(key, token, start_job)
        except Exception:  # the database, or a bug: the next tick tries again
            log.exception("telegram poll failed", extra={"bot": key[:8]})
    return taken


def poll_once(key: str, token: str, start_job: updates.StartJob = None) -> int:
    """getUpdates from the bot's offset, each update taken with its offset; the updates
    taken (0 when another worker polls this bot, or it is resting after a problem)."""
    TelegramBot.objects.get_or_create(key=key)
    client = api.BotApi(settings.DLQ_TELEGRAM_API_URL, token)
    calls = []
    with transaction.atomic():
        row = TelegramBot.objects.select_for_update(skip_locked=True).filter(key=key).first()
        if row is None or _resting(row):
            return 0
        try:
            _name(row, client)
            found = client.get_updates(row.offset, WAIT_S, UPDATES_LIMIT)
        except api.ApiError as e:
            _trouble(row, e)
            return 0
        ordered = sorted((u for u in found if _id_of(u) is not None), key=_id_of)
        for update in ordered:
            calls += _take(row, update, updates.Bot(key, token), start_job)
        _fine(row)
    api.make(settings.DLQ_TELEGRAM_API_URL, calls)
    return len(ordered)


def _id_of(update) -> int | None:
    found = update.get("update_id") if isinstance(update, dict) else None
    return found if updates.is_id(found, lowest=0) else None


def _take(row: TelegramBot, update: dict, bot: updates.Bot, start_job) -> list[api.Call]:
    calls = []
    if update["update_id"] >= row.offset:
        try:
            with transaction.atomic():
                calls = updates.take(update, bot, start_job)
        except Exception:  # a bug: this update is skipped, never retried forever
            log.exception("telegram update not handled", extra={"bot": row.key[:8]})
    row.offset = max(row.offset, update["update_id"] + 1)
    row.save(update_fields=["offset"])
    return calls


def _name(row: TelegramBot, client: api.BotApi) -> None:
    """The bot's name, asked once (the account page's deep link needs it)."""
    if row.username:
        return
    name = client.get_me().get("username")
    if isinstance(name, str) and name:
        row.username = name[:64]
        row.save(update_fields=["username"])


def _resting(row: TelegramBot) -> bool:
    return bool(row.problem and row.checked_at and timezone.now() - row.checked_at < BACKOFF)


def _trouble(row: TelegramBot, error: api.ApiError) -> None:
    problem = CONFLICT if error.reason == api.CONFLICT else f"Polling Telegram failed: {error}"
    if problem != row.problem:  # once, not on every poll
        log.warning("telegram polling stopped",
                    extra={"bot": row.username or row.key[:8], "problem": problem})  # fmt: skip
    row.problem, row.checked_at = problem, timezone.now()
    row.save(update_fields=["problem", "checked_at"])


def _fine(row: TelegramBot) -> None:
    if row.problem:
        log.info("telegram polling works again", extra={"bot": row.username or row.key[:8]})
        row.problem, row.checked_at = "", timezone.now()
        row.save(update_fields=["problem", "checked_at"])
