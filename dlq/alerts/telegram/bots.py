"""The bots the console's Telegram channels use, each known by the SHA-256 of its token
(several channels may share one bot; a token is never stored outside its channel)."""

import hashlib

from dlq.models import AlertChannel, ChannelKind, TelegramBot


def bot_key(token: str) -> str:
    return hashlib.sha256(str(token).encode()).hexdigest()


def tokens() -> dict[str, str]:
    """Each bot's key and token, from the enabled Telegram channels."""
    found = {}
    for channel in AlertChannel.objects.filter(kind=ChannelKind.TELEGRAM, enabled=True):
        token = str((channel.config or {}).get("token") or "")
        if token:
            found[bot_key(token)] = token
    return found


def known() -> list[TelegramBot]:
    """The bots whose name getMe told (the account page's deep links need it)."""
    keys = list(tokens())
    return list(TelegramBot.objects.filter(key__in=keys).exclude(username="").order_by("username"))


def problems(channels: list[AlertChannel]) -> dict[int, str]:
    """What keeps each Telegram channel's bot from taking presses, by channel id."""
    keys = {c.pk: bot_key((c.config or {}).get("token") or "")
            for c in channels if c.kind == ChannelKind.TELEGRAM}  # fmt: skip
    found = dict(TelegramBot.objects.filter(key__in=set(keys.values())).exclude(problem="")
                 .values_list("key", "problem"))  # fmt: skip
    return {pk: found[key] for pk, key in keys.items() if key in found}
