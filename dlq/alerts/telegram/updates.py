"""One Telegram update handled: a button pressed in an alert (`callback_query`) or a
`/start CODE` message linking the Telegram user who sent it.

Nothing of an update is trusted: a button's data must be `dlq:ACTION:REF` naming a button
this console made (presses.py), the presser's id an integer; a press counts only from a
linked console user. Every update id is taken once per bot (ChatDelivery): Telegram's
redelivery never repeats a press. `take` does the work in the caller's transaction (the
poller commits the bot's offset with it) and returns the answers to make once it
committed; `handle` is both, for the webhook. Hostile input is answered with a refusal,
or not at all, never an exception."""

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from dlq.alerts import links, presses, texts
from dlq.alerts.formats import cap
from dlq.alerts.telegram import api, bots, edits
from dlq.models import AlertButton, ChatDelivery, ChatVia

log = logging.getLogger("dlq.telegram")

DATA = re.compile(r"dlq:(ack|mute|canary):([A-Za-z0-9_-]{1,24})")
MAX_ID = 2**53  # Telegram's user and chat ids have at most 52 significant bits
ANSWER_CHARS = 200  # answerCallbackQuery's text
NOT_OURS = "This is not a button of this console: nothing was done."
NO_PRESSER = "Telegram did not say who pressed this button: nothing was done."

StartJob = Callable[[object], None] | None


@dataclass
class Bot:
    key: str  # bots.bot_key(token)
    token: str


def handle(update, bot: Bot | None = None, start_job: StartJob = None) -> int:
    """Take one update in its own transaction, then answer; how many calls were made. The
    webhook's: `bot` None finds the bot from what the update names."""
    try:
        with transaction.atomic():
            calls = take(update, bot, start_job)
    except Exception:  # a bug or the database: logged, never the sender's problem
        log.exception("telegram update not handled")
        return 0
    api.make(settings.DLQ_TELEGRAM_API_URL, calls)
    return len(calls)


def take(update, bot: Bot | None, start_job: StartJob) -> list[api.Call]:
    """Do what `update` asks, in the caller's transaction; the calls to make after it."""
    if not isinstance(update, dict) or not is_id(update.get("update_id"), lowest=0):
        return []
    query, message = update.get("callback_query"), update.get("message")
    if not isinstance(query, dict) and not isinstance(message, dict):
        return []  # neither kind the console asks for
    bot = bot or (_button_bot(query) if isinstance(query, dict) else _code_bot(message))
    if bot is None or not _first_time(bot, update["update_id"]):
        return []
    if isinstance(query, dict):
        return _pressed(query, bot, start_job)
    return _started(message, bot)


def is_id(value, lowest: int = -MAX_ID) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and lowest <= value < MAX_ID


def _first_time(bot: Bot, update_id: int) -> bool:
    _, made = ChatDelivery.objects.get_or_create(key=f"tg:{bot.key[:16]}:{update_id}",
                                                 defaults={"seen_at": timezone.now()})  # fmt: skip
    return made


def _parsed(data) -> tuple[str, str] | None:
    if not isinstance(data, str) or len(data.encode()) > 64:
        return None
    found = DATA.fullmatch(data)
    return (found[1], found[2]) if found else None


# --- a button pressed -------------------------------------------------------------------


def _pressed(query: dict, bot: Bot, start_job: StartJob) -> list[api.Call]:
    query_id = query.get("id")
    if not isinstance(query_id, str) or not 0 < len(query_id) <= 64:
        return []  # nothing to answer to

    def answer(text: str, refused: bool = True) -> api.Call:
        payload = {"callback_query_id": query_id, "text": cap(text, ANSWER_CHARS),
                   "show_alert": refused}  # fmt: skip
        return api.Call(bot.token, "answerCallbackQuery", payload)

    parsed = _parsed(query.get("data"))
    if parsed is None:
        return [answer(NOT_OURS)]
    sender = query.get("from")
    presser = sender.get("id") if isinstance(sender, dict) else None
    if not is_id(presser, lowest=1):
        return [answer(NO_PRESSER)]
    outcome = presses.press(ChatVia.TELEGRAM, str(presser), *parsed)
    if outcome.job is not None and start_job is not None:
        transaction.on_commit(partial(start_job, outcome.job))
    if outcome.unlinked:
        return [answer(_how_to_link("Your Telegram account is not linked to a console user"))]
    calls = [answer(outcome.text, refused=not outcome.done)]
    edit = edits.call_for(outcome.attempt) if outcome.done else None
    return calls + ([edit] if edit else [])


def _how_to_link(why: str) -> str:
    account = texts.console_url("account/")
    return f"{why}: open {account} and use its Telegram link, then press again."


def _button_bot(query: dict) -> Bot | None:
    """The bot of the alert a button belongs to (the webhook serves every bot)."""
    parsed = _parsed(query.get("data"))
    if parsed is None:
        return None
    button = AlertButton.objects.filter(ref=parsed[1]).select_related("attempt__channel").first()
    channel = button.attempt.channel if button else None
    token = str((channel.config or {}).get("token") or "") if channel else ""
    return Bot(bots.bot_key(token), token) if token else None


# --- /start CODE ------------------------------------------------------------------------


def _code(message) -> str | None:
    """The code of a `/start CODE` message ("" for a bare /start); None for any other."""
    text = message.get("text") if isinstance(message, dict) else None
    words = text.split() if isinstance(text, str) else []
    if not words or words[0].split("@")[0] != "/start":
        return None
    return words[1] if len(words) == 2 else ""


def _code_bot(message) -> Bot | None:
    code = _code(message)
    key = links.bot_of(code) if code else ""
    token = bots.tokens().get(key) if key else None
    return Bot(key, token) if token else None


def _started(message: dict, bot: Bot) -> list[api.Call]:
    code, chat = _code(message), message.get("chat")
    if code is None or not isinstance(chat, dict) or not is_id(chat.get("id")):
        return []  # not a message the console answers

    def reply(text: str) -> api.Call:
        return api.Call(bot.token, "sendMessage", {"chat_id": chat["id"], "text": text})

    sender = message.get("from")
    user_id = sender.get("id") if isinstance(sender, dict) else None
    if not is_id(user_id, lowest=1):
        return [reply("Telegram did not say who you are: nothing was linked.")]
    if not code:
        account = texts.console_url("account/")
        return [reply(f"This bot sends DLQ Console alerts. To act on them, open {account} "
                      "and use its Telegram link.")]  # fmt: skip
    if links.bot_of(code) not in ("", bot.key):
        return [reply("This link code is for another bot of the console: nothing was linked.")]
    name = sender.get("username") if isinstance(sender.get("username"), str) else ""
    try:
        made = links.redeem(code, ChatVia.TELEGRAM, chat_user=str(user_id), chat_name=name)
    except links.LinkError as e:
        return [reply(str(e))]
    return [reply(f"Linked to console user {cap(made.user.get_username(), 40)}: the buttons of "
                  "the console's alerts now act as that user.")]  # fmt: skip
