"""What an alert says, written for each destination's markup: Slack mrkdwn, Telegram HTML,
plain text. Queue names, exception types and rule names are untrusted: each is cut to a
line of VALUE_CHARS and escaped for the markup it goes into. No Django, no I/O here."""

import html
from dataclasses import dataclass, field

VALUE_CHARS = 120  # each untrusted value is cut to this many characters before escaping


@dataclass
class Item:
    """One line of an alert. `name` and the values of `where` are untrusted (queue names,
    exception types from message headers); `data` is what a JSON webhook receives."""

    name: str
    count: int
    url: str
    where: list[tuple[str, str]] = field(default_factory=list)  # ("in", queue name), ...
    new: bool = False
    data: dict = field(default_factory=dict)
    ref: str = ""  # a group's button reference (dlq/alerts/presses.py); "" for no buttons
    state: str = ""  # a group's alert state (dlq/alerts/lifecycle.py), once it has buttons
    page: str = ""  # the group's page, where its Open button goes
    owner: str = ""  # untrusted: who acknowledged the group (a console user name), if anyone


@dataclass
class Alert:
    title: str  # our own words, no untrusted content
    summary: str  # likewise
    url: str
    label: str = ""  # untrusted: the rule name an admin typed
    queues: list[Item] = field(default_factory=list)
    groups: list[Item] = field(default_factory=list)
    facts: dict = field(default_factory=dict)


def cap(value: str, limit: int = VALUE_CHARS) -> str:
    value = " ".join(str(value or "").split())  # one line: no newline can break a layout
    return value if len(value) <= limit else value[: limit - 1] + "…"


def units(text: str) -> int:
    """Length as Telegram and Slack count it (UTF-16 code units)."""
    return len(text.encode("utf-16-le")) // 2


def fit(lines: list[str], limit: int) -> str:
    """Whole lines up to `limit`: a cut never falls inside an escape or a tag."""
    kept, used = [], 0
    for i, line in enumerate(lines):
        rest = len(lines) - i - 1
        reserve = 24 if rest else 0  # room for the "… N more lines" marker
        cost = units(line) + (1 if kept else 0)
        if used + cost + reserve > limit:
            kept.append(f"… {len(lines) - i} more lines")
            break
        kept.append(line)
        used += cost
    return "\n".join(kept)


def paragraphs(lines: list[str]) -> list[list[str]]:
    """Lines grouped at the blank lines between them."""
    groups, current = [], []
    for line in [*lines, ""]:
        if line:
            current.append(line)
        elif current:
            groups.append(current)
            current = []
    return groups


class Format:
    """How one channel writes text; subclasses escape for their markup."""

    def text(self, value: str) -> str:
        return value

    def code(self, value: str) -> str:
        return cap(value) or "-"

    def bold(self, value: str) -> str:
        return value

    def link(self, url: str, label: str) -> str:
        return f"{label}: {url}"

    def item(self, item: Item) -> str:
        line = f"• {self.code(item.name)}"
        if item.where:
            line += " (" + ", ".join(f"{word} {self.code(v)}" for word, v in item.where) + ")"
        line += f" — {item.count}"
        if item.new:
            line += f" {self.bold('NEW')}"
        return f"{line} · {self.link(item.url, 'open')}"

    def lines(self, alert: Alert) -> list[str]:
        head = self.bold(alert.title)
        if alert.label:
            head += f" · rule {self.code(alert.label)}"
        lines = [head, self.text(alert.summary)]
        if alert.queues:
            lines += ["", self.bold("Queues")] + [self.item(i) for i in alert.queues]
        if alert.groups:
            lines += ["", self.bold("Top failure groups")] + [self.item(i) for i in alert.groups]
        return [*lines, "", self.link(alert.url, "Open in DLQ Console")]


class SlackFormat(Format):
    """Slack mrkdwn: only & < > have escapes; untrusted values go in code spans, where
    * _ ~ do not format, and a backtick (which would end the span) becomes ˋ."""

    def text(self, value: str) -> str:
        return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    def code(self, value: str) -> str:
        value = cap(value).replace("`", "ˋ")
        return f"`{self.text(value)}`" if value else "-"

    def bold(self, value: str) -> str:
        return f"*{self.text(value)}*"

    def link(self, url: str, label: str) -> str:
        url = url.replace("|", "%7C").replace("<", "%3C").replace(">", "%3E")
        return f"<{self.text(url)}|{self.text(label)}>"  # Slack unescapes &amp; in URLs too


class TelegramFormat(Format):
    """Telegram HTML: every untrusted character is escaped; values in <code>."""

    def text(self, value: str) -> str:
        return html.escape(value, quote=False)

    def code(self, value: str) -> str:
        value = cap(value)
        return f"<code>{self.text(value)}</code>" if value else "-"

    def bold(self, value: str) -> str:
        return f"<b>{self.text(value)}</b>"

    def link(self, url: str, label: str) -> str:
        return f'<a href="{html.escape(url, quote=True)}">{self.text(label)}</a>'
