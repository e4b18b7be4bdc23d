"""A press of a Slack alert's button, as Slack's interactivity request brings it.

`verify` says whether a request is Slack's (the `v0` signature over the timestamp and the
raw body, with the signing secret; a timestamp within 5 minutes) and never seen before
(each signature is kept a day in ChatDelivery); `parse` reads the `payload` form field;
`handle` does the press (dlq/alerts/presses.py) and says what to post back through the
payload's `response_url`: the alert re-rendered with its groups' states and who did what,
or, only to the presser (ephemeral), why not, or how to link their Slack account."""

import hashlib
import hmac
import json
import re
import time
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import parse_qs

from django.db import IntegrityError, transaction
from django.utils import timezone

from dlq.alerts import chat, links, presses, texts
from dlq.alerts.formats import SlackFormat, cap
from dlq.alerts.slack import blocks
from dlq.models import AlertAttempt, ChatDelivery, ChatVia

MAX_AGE_S = 300  # Slack's advice: older (or later) than 5 minutes is a replay
KEEP = timedelta(days=1)  # a signature is older than MAX_AGE_S long before it is forgotten
PURGE_EVERY = 50  # delete forgotten signatures once in this many requests
SIGNATURE = re.compile(r"^v0=([0-9a-f]{64})$")
TIMESTAMP = re.compile(r"^[0-9]{1,12}$")
ACTIONS = {"dlq_ack": "ack", "dlq_mute": "mute", "dlq_canary": "canary", blocks.OPEN: None}


class Refused(Exception):
    """A request the console does not act on; the message is a short note of our own."""

    def __init__(self, status: int, note: str):
        super().__init__(note)
        self.status = status


@dataclass
class Press:
    action: str | None  # presses' action; None for the Open button (a plain link)
    value: str
    user_id: str
    user_name: str
    response_url: str


@dataclass
class Reply:
    message: dict | None  # for the response URL
    job: object = None  # a Canary's job, to start after the commit


def verify(secret: str, timestamp, signature, body: bytes, now: float | None = None) -> None:
    """Refused (401) unless Slack signed this body at this time, within 5 minutes of now."""
    found = SIGNATURE.match(signature or "")
    if not found or not TIMESTAMP.match(timestamp or ""):
        raise Refused(401, "slack request without a well-formed signature or timestamp")
    if abs((now if now is not None else time.time()) - int(timestamp)) > MAX_AGE_S:
        raise Refused(401, "slack request timestamp more than 5 minutes from now")
    base = b"v0:" + timestamp.encode() + b":" + body
    expected = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, found.group(1)):
        raise Refused(401, "slack request signature does not match")
    _first_time(found.group(1))


def _first_time(signature: str) -> None:
    """Record the signature; Refused (401) if it was seen before: a press is done once."""
    try:
        with transaction.atomic():
            row = ChatDelivery.objects.create(key=f"slack:{signature}", seen_at=timezone.now())
    except IntegrityError:
        raise Refused(401, "slack request replayed (its signature was seen before)") from None
    if row.pk % PURGE_EVERY == 0:
        ChatDelivery.objects.filter(seen_at__lt=timezone.now() - KEEP).delete()


def parse(body: bytes) -> Press:
    """The press in the form field `payload`; Refused (400) for anything else."""
    try:
        form = parse_qs(body.decode("utf-8"), max_num_fields=20, strict_parsing=False)
        payload = json.loads(form["payload"][0])
    except (UnicodeDecodeError, ValueError, KeyError, RecursionError):
        raise Refused(400, "the request has no JSON payload") from None
    if not isinstance(payload, dict) or payload.get("type") != "block_actions":
        raise Refused(400, "only block_actions interactions are taken")
    pressed = payload.get("actions")
    first = pressed[0] if isinstance(pressed, list) and pressed else None
    action_id = first.get("action_id") if isinstance(first, dict) else None
    if not isinstance(action_id, str) or action_id not in ACTIONS:
        raise Refused(400, "the action is not one of the console's buttons")
    user = payload.get("user") if isinstance(payload.get("user"), dict) else {}
    user_id, value = user.get("id"), first.get("value", "")
    url = payload.get("response_url", "")
    if not all(isinstance(v, str) for v in (user_id, value, url)) or not 0 < len(user_id) <= 64:
        raise Refused(400, "the payload lacks the user, the value or the response URL")
    name = next((n for n in (user.get("username"), user.get("name")) if isinstance(n, str)), "")
    return Press(ACTIONS[action_id], value, user_id, name[:150], url)


def handle(press: Press) -> Reply:
    """Do the press; what to post to its response URL."""
    if press.action is None:
        return Reply(None)  # Open: Slack opened the link itself
    outcome = presses.press(ChatVia.SLACK, press.user_id, press.action, press.value)
    if outcome.unlinked:
        return Reply(_link_offer(press))
    if not outcome.done:
        return Reply(ephemeral(outcome.text))
    return Reply(_updated(outcome, press.action) or ephemeral(outcome.text), outcome.job)


def ephemeral(text: str) -> dict:
    fmt = SlackFormat()
    return {"response_type": "ephemeral", "replace_original": False, "text": fmt.text(text)}


def _link_offer(press: Press) -> dict:
    code = links.slack_code(press.user_id, press.user_name)
    url = texts.console_url(f"account/link/slack/{code}/")
    fmt = SlackFormat()
    text = (
        "Your Slack account is not linked to a DLQ Console user, so the console did nothing."
        f" Open {fmt.link(url, url)} while signed in to the console to link it: the link works"
        " once, for 10 minutes. Then press the button again."
    )
    return {"response_type": "ephemeral", "replace_original": False, "text": text}


def _updated(outcome: presses.Outcome, action: str) -> dict | None:
    """The alert as it stands now, with a line saying who did what to which group."""
    attempt = AlertAttempt.objects.select_related("digest__rule").get(pk=outcome.attempt.pk)
    if attempt.digest is None:
        return None  # its digest was deleted: nothing to re-render
    alert = texts.compose(attempt.digest)
    chat.add_buttons(attempt, alert)
    chat.remember(attempt, alert, None)
    fmt = SlackFormat()
    named = next((i.name for i in alert.groups if i.data.get("group") == outcome.group), "")
    who = fmt.code(cap(outcome.user.get_username(), 40))
    note = f"{who} {presses.DONE[action]} {fmt.code(named or outcome.group)}"
    return {"replace_original": True, **blocks.payload(alert, note)}
