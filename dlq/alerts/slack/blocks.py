"""A Slack alert as Block Kit: the text sections as before and, when its groups carry button
references (dlq/alerts/chat.py), a section and a row of buttons per group.

No Django, no I/O: the incoming webhook (dlq/alerts/transports.py) and the message a press
puts in place of the alert (dlq/alerts/slack/interactions.py) both build it here. Untrusted
values (queue names, exception types, user names) are escaped by `SlackFormat`; every text
stays within Slack's limits (MAX_BLOCKS blocks, SECTION_CHARS per section)."""

from dataclasses import replace

from dlq.alerts.formats import Alert, Item, SlackFormat, cap, fit, paragraphs

MAX_BLOCKS = 50
SECTION_CHARS = 3000
TITLE_CHARS = 300
URL_CHARS = 3000  # a url button's limit
# action_id -> the button's words (at most 75 characters); `dlq_open` is a plain link.
BUTTONS = {"dlq_ack": "Acknowledge", "dlq_mute": "Mute 1 h", "dlq_canary": "Canary"}
OPEN = "dlq_open"
CANARY_CONFIRM = {
    "title": {"type": "plain_text", "text": "Start a canary replay?"},
    "text": {
        "type": "plain_text",
        "text": "10 messages of this group are replayed to where "
        "they came from first; the rest follow only if they stay away.",
    },  # fmt: skip
    "confirm": {"type": "plain_text", "text": "Start"},
    "deny": {"type": "plain_text", "text": "Cancel"},
}


def section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def payload(alert: Alert, note: str = "") -> dict:
    """The webhook's JSON: `text` (notifications' fallback) and `blocks`; `note` (mrkdwn,
    escaped by the caller) is a context line at the end."""
    fmt = SlackFormat()
    if any(item.ref for item in alert.groups):
        blocks = _with_buttons(fmt, alert, reserve=1 if note else 0)
    else:
        blocks = [section(fit(part, SECTION_CHARS)) for part in paragraphs(fmt.lines(alert))]
        blocks = blocks[: MAX_BLOCKS - (1 if note else 0)]
    if note:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": note}]})
    return {"text": fmt.text(cap(alert.title, TITLE_CHARS)), "blocks": blocks}


def _with_buttons(fmt: SlackFormat, alert: Alert, reserve: int) -> list[dict]:
    """The head and queues, a section and buttons per group, then the console link."""
    rest = paragraphs(fmt.lines(replace(alert, groups=[])))
    *head, footer = [section(fit(part, SECTION_CHARS)) for part in rest]
    room = (MAX_BLOCKS - reserve - len(head) - 3) // 2  # the heading, a "more" line, the footer
    groups = alert.groups[:room]
    blocks = [*head, section(fmt.bold("Top failure groups"))]
    for item in groups:
        blocks += [section(fit([fmt.item(item), *_state(fmt, item)], SECTION_CHARS))]
        if item.ref:
            blocks.append(actions(item))
    if len(alert.groups) > len(groups):
        blocks.append(section(f"… {len(alert.groups) - len(groups)} more groups"))
    return [*blocks, footer]


def _state(fmt: SlackFormat, item: Item) -> list[str]:
    """The group's state when it is not open: who acknowledged it, or resolved."""
    if item.state == "acknowledged":
        who = item.data.get("acknowledged_by")
        return [f"_acknowledged by_ {fmt.code(who)}" if who else "_acknowledged_"]
    if item.state == "resolved":
        return ["_resolved: nothing of it is parked any more_"]
    return []


def actions(item: Item) -> dict:
    """The group's buttons; each press names the group only by its reference."""
    elements = [_button(action_id, words, value=item.ref) for action_id, words in BUTTONS.items()]
    elements[-1]["confirm"] = CANARY_CONFIRM
    page = item.page or item.url
    if page and len(page) <= URL_CHARS:
        elements.append(_button(OPEN, "Open", url=page))
    return {"type": "actions", "elements": elements}


def _button(action_id: str, words: str, **fields) -> dict:
    text = {"type": "plain_text", "text": words[:75]}
    return {"type": "button", "action_id": action_id, "text": text, **fields}
