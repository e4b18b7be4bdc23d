"""Linking Slack and Telegram users to console users, with one-time codes.

Telegram: a signed-in user's /account/ page makes a code for a bot's deep link
(`https://t.me/BOT?start=CODE`); the bot's `/start CODE` message links the Telegram user who
sent it. Slack: an unlinked user's press makes a code for that Slack user; the console URL
holding it links them to whoever opens it signed in and confirms (a POST with CSRF). A code
is single-use and valid for 10 minutes; only its SHA-256 is stored. Every link and unlink
is audited with `via` and the chat user's id."""

import hashlib
import re
import secrets
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone

from dlq import audit
from dlq.models import AuditAction, ChatLink, ChatVia, LinkCode

VALID = timedelta(minutes=10)
CODE = re.compile(r"^[A-Za-z0-9_-]{20,64}$")  # Telegram's start parameter alphabet
MAX_NAME = 150


class LinkError(Exception):
    """A link the console will not make; the message is for the person linking."""


class CodeGone(LinkError):
    """A real code that was used already or has expired (the pages answer 410, not 400)."""


def _hash(code: str) -> str:
    return hashlib.sha256(code.encode()).hexdigest()


def _new_code() -> str:
    return secrets.token_urlsafe(24)  # 32 characters of [A-Za-z0-9_-]


def telegram_code(user, bot: str) -> str:
    """A code for `user` to send to the bot whose key is `bot` as `/start CODE`."""
    code = _new_code()
    LinkCode.objects.create(code_hash=_hash(code), via=ChatVia.TELEGRAM, user=user, bot=bot,
                            expires_at=timezone.now() + VALID)  # fmt: skip
    return code


def slack_code(chat_user: str, chat_name: str = "") -> str:
    """A code for the Slack user `chat_user`, to be opened by a signed-in console user."""
    code = _new_code()
    LinkCode.objects.create(code_hash=_hash(code), via=ChatVia.SLACK, chat_user=chat_user,
                            chat_name=chat_name[:MAX_NAME],
                            expires_at=timezone.now() + VALID)  # fmt: skip
    return code


def pending(code: str, via: str) -> LinkCode:
    """The unused, unexpired code; LinkError (in words) for any other."""
    if not isinstance(code, str) or not CODE.match(code):
        raise LinkError("This link code is not valid.")
    found = LinkCode.objects.filter(code_hash=_hash(code), via=via).first()
    if found is None:
        raise LinkError("This link code is not valid.")
    if found.used_at is not None:
        raise CodeGone("This link code was used already: ask for a new one.")
    if found.expires_at <= timezone.now():
        raise CodeGone("This link code has expired (codes last 10 minutes): ask for a new one.")
    return found


def bot_of(code: str) -> str:
    """The key of the bot a Telegram code was made for, used or expired too (the bot that
    says why it is refused); "" for a code the console never made."""
    if not isinstance(code, str) or not CODE.match(code):
        return ""
    found = LinkCode.objects.filter(code_hash=_hash(code), via=ChatVia.TELEGRAM).first()
    return found.bot if found else ""


def redeem(code: str, via: str, *, user=None, chat_user: str = "", chat_name: str = ""):
    """Use a code: Telegram's names its console user (the chat user is who sent it), Slack's
    its chat user (the console user is who opened it). The link made; LinkError if none."""
    with transaction.atomic():
        found = pending(code, via)
        claimed = LinkCode.objects.filter(pk=found.pk, used_at=None).update(used_at=timezone.now())
        if not claimed:  # used by a concurrent request a moment ago
            raise CodeGone("This link code was used already: ask for a new one.")
        user = found.user if via == ChatVia.TELEGRAM else user
        chat_user = chat_user if via == ChatVia.TELEGRAM else found.chat_user
        chat_name = (chat_name if via == ChatVia.TELEGRAM else found.chat_name)[:MAX_NAME]
        if user is None or not user.is_active:
            raise LinkError("The console user of this code is not active.")
        return link(user, via, chat_user, chat_name)


def link(user, via: str, chat_user: str, chat_name: str = "") -> ChatLink:
    """Link (or move) a chat user to `user`; audited."""
    with transaction.atomic():
        before = ChatLink.objects.filter(via=via, chat_user=chat_user).first()
        if before is not None and before.user_id != user.pk:
            unlink(before, user, "linked to another console user")
        elif before is not None:
            return before
        try:
            with transaction.atomic():
                made = ChatLink.objects.create(user=user, via=via, chat_user=chat_user,
                                               chat_name=chat_name[:MAX_NAME])  # fmt: skip
        except IntegrityError:  # a concurrent redeem linked them first
            raise LinkError("This chat user was linked a moment ago.") from None
        audit.record(user, AuditAction.CHAT_LINK, f"linked {via} user {chat_user}",
                     detail=_described(made))  # fmt: skip
    return made


def unlink(found: ChatLink, actor, reason: str = "") -> None:
    with transaction.atomic():
        detail = _described(found)
        found.delete()
        audit.record(actor, AuditAction.CHAT_UNLINK, reason or f"unlinked {found.via} user",
                     detail=detail)  # fmt: skip


def linked_user(via: str, chat_user: str):
    """The console user a chat user is linked to (active or not), or None."""
    found = ChatLink.objects.filter(via=via, chat_user=chat_user).select_related("user").first()
    return found.user if found else None


def _described(found: ChatLink) -> dict:
    return {"via": found.via, "chat_user": found.chat_user, "chat_name": found.chat_name,
            "user": found.user.get_username()}  # fmt: skip
