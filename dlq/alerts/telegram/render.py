"""An alert as a Telegram message: its text in Telegram HTML and, when its groups carry
button references (dlq/alerts/chat.py), the groups numbered with their state and an inline
keyboard of one row per group: "1 · Acknowledge", "1 · Mute 1 h", "1 · Canary" (callbacks
`dlq:ACTION:REF`) and "1 · Open" (a link). Used for sendMessage and editMessageText alike.

No Django here. Telegram's limits: 4096 characters (UTF-16 units) of text, 64 bytes of
callback_data, 100 buttons; untrusted values are capped and escaped (formats.py)."""

import ipaddress
from dataclasses import replace
from urllib.parse import urlsplit

from dlq.alerts.formats import Alert, Item, TelegramFormat, cap, fit

LIMIT = 4096
MAX_BUTTONS = 100
CALLBACK_BYTES = 64
ACTIONS = (("ack", "Acknowledge"), ("mute", "Mute 1 h"), ("canary", "Canary"))
RESOLVED = "resolved"


def callback_data(action: str, ref: str) -> str:
    return f"dlq:{action}:{ref}"


class NumberedFormat(TelegramFormat):
    """Telegram HTML, with a digest's groups numbered as its keyboard rows are."""

    def lines(self, alert: Alert) -> list[str]:
        if not any(item.ref for item in alert.groups):
            return super().lines(alert)
        lines = super().lines(replace(alert, groups=[]))
        groups = [self.bold("Top failure groups")]
        groups += [self.numbered(n, item) for n, item in enumerate(alert.groups, start=1)]
        return [*lines[:-2], "", *groups, *lines[-2:]]  # before the closing link

    def numbered(self, number: int, item: Item) -> str:
        line = f"{number} · {self.item(item).removeprefix('• ')}"
        if item.state == RESOLVED:
            return f"{line} · {self.bold('resolved')}"
        if item.owner:
            return f"{line} · {self.bold('acknowledged')} by {self.code(cap(item.owner, 40))}"
        return line


def keyboard(alert: Alert) -> dict | None:
    """One row per listed group with buttons; a resolved group keeps only its link."""
    rows, used = [], 0
    for number, item in enumerate(alert.groups, start=1):
        row = _row(number, item) if item.ref else []
        if not row or used + len(row) > MAX_BUTTONS:
            continue
        rows.append(row)
        used += len(row)
    return {"inline_keyboard": rows} if rows else None


def _row(number: int, item: Item) -> list[dict]:
    row = []
    if item.state != RESOLVED:
        for action, label in ACTIONS:
            data = callback_data(action, item.ref)
            if len(data.encode()) <= CALLBACK_BYTES:
                row.append({"text": f"{number} · {label}", "callback_data": data})
    page = item.page or item.url
    if linkable(page):
        row.append({"text": f"{number} · Open", "url": page})
    return row


def linkable(url: str) -> bool:
    """Whether Telegram takes `url` for a URL button: it refuses the whole message for one
    to a host of no public name (localhost, a bare word), so such a console gets no Open
    button (the text's own link stays)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return False
    if parts.scheme not in ("http", "https") or not host:
        return False
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return "." in host and not host.endswith((".localhost", ".local"))


def message(alert: Alert) -> dict:
    """sendMessage's (and editMessageText's) fields but the chat and message ids."""
    made = {
        "text": fit(NumberedFormat().lines(alert), LIMIT),
        "parse_mode": "HTML",
        "link_preview_options": {"is_disabled": True},
    }
    markup = keyboard(alert)
    if markup:
        made["reply_markup"] = markup
    return made
