"""A stand-in for Slack, a real HTTP server on 127.0.0.1 (tests/httprecorder.py): it takes
the console's incoming-webhook posts (the alerts, with their blocks), serves the response
URLs a press carries (recording what the console posts there), and presses buttons as Slack
does: a form-encoded `payload=` POST to the console's interactivity URL, signed with the
app's signing secret (`X-Slack-Signature`, `X-Slack-Request-Timestamp`)."""

import hashlib
import hmac
import ipaddress
import json
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass
from urllib.error import HTTPError
from urllib.parse import urlencode

import pytest

from tests.httprecorder import Recorder

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"  # Slack's documented example signing secret
INTERACTIONS = "/integrations/slack/interactions"


@dataclass
class Answer:
    status: int
    body: bytes
    seconds: float  # how long the console took to answer


class SlackApi:
    def __init__(self, secret: str = SECRET):
        self.secret = secret
        self.server = Recorder()
        self.url = self.server.url
        self.hook = f"{self.url}/services/T0001/B0001/SECRETwebhookSECRET"

    # --- what the console sent ----------------------------------------------------------

    def alerts(self) -> list[dict]:
        """The alerts posted to the incoming webhook, oldest first."""
        return [r.json() for r in self.server.requests if r.path.startswith("/services/")]

    def responses(self, url: str | None = None) -> list[dict]:
        """What the console posted to response URLs (to one of them, given)."""
        path = url.removeprefix(self.url) if url else "/respond/"
        return [r.json() for r in self.server.requests if r.path.startswith(path)]

    def wait_responses(self, count: int, timeout: float = 15.0) -> list[dict]:
        with self.server.lock:
            self.server.lock.wait_for(lambda: len(self.responses()) >= count, timeout)
        return self.responses()

    def response_url(self) -> str:
        return f"{self.url}/respond/T0001/{uuid.uuid4().hex}"

    # --- pressing a button ------------------------------------------------------------------

    def payload(self, action_id: str, value: str = "", *, user_id: str = "U0OPER",
                username: str = "oper", response_url: str = "") -> dict:  # fmt: skip
        """A block_actions payload as Slack sends it (the fields the console reads and a few
        it does not)."""
        return {
            "type": "block_actions",
            "team": {"id": "T0001", "domain": "acme"},
            "user": {"id": user_id, "username": username, "name": username, "team_id": "T0001"},
            "api_app_id": "A0001",
            "token": "deprecated-verification-token",
            "trigger_id": "123.456.abc",
            "container": {"type": "message", "message_ts": "1700000000.000100"},
            "channel": {"id": "C0001", "name": "alerts"},
            "response_url": response_url or self.response_url(),
            "actions": [
                {
                    "type": "button",
                    "action_id": action_id,
                    "block_id": "b1",
                    "value": value,
                    "action_ts": "1700000001.000200",
                }
            ],  # fmt: skip
        }

    def form(self, payload: dict) -> bytes:
        return urlencode({"payload": json.dumps(payload)}).encode()

    def sign(self, body: bytes, timestamp: int | None = None) -> dict:
        timestamp = int(time.time()) if timestamp is None else timestamp
        base = f"v0:{timestamp}:".encode() + body
        digest = hmac.new(self.secret.encode(), base, hashlib.sha256).hexdigest()
        return {"X-Slack-Request-Timestamp": str(timestamp), "X-Slack-Signature": f"v0={digest}"}

    def send(self, console: str, body: bytes, headers: dict | None = None) -> Answer:
        """POST `body` to the console's interactivity URL with these headers, as they are."""
        request = urllib.request.Request(
            f"{console}{INTERACTIONS}", data=body, method="POST",
            headers={"Content-Type": "application/x-www-form-urlencoded",
                     "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
                     **(headers or {})})  # fmt: skip
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                status, got = answer.status, answer.read()
        except HTTPError as e:
            with e:
                status, got = e.code, e.read()
        return Answer(status, got, time.monotonic() - started)

    def press(self, console: str, payload: dict, timestamp: int | None = None) -> Answer:
        """Press as Slack does: the payload form-encoded and signed now (or at `timestamp`)."""
        body = self.form(payload)
        return self.send(console, body, self.sign(body, timestamp))


def buttons(alert: dict) -> list[dict]:
    """Each actions block's buttons, in order: [{action_id: element}, ...] per group."""
    return [{e["action_id"]: e for e in b["elements"]} for b in alert["blocks"]
            if b["type"] == "actions"]  # fmt: skip


@pytest.fixture
def slack(settings, monkeypatch):
    """Slack, standing in on loopback: alert destinations and response URLs may reach it
    (DLQ_ALERT_ALLOWED_NETS, here and in the processes tests start); the console verifies
    presses with its signing secret."""
    settings.DLQ_ALERT_ALLOWED_NETS = [ipaddress.ip_network("127.0.0.0/8")]
    monkeypatch.setenv("DLQ_ALERT_ALLOWED_NETS", "127.0.0.0/8")
    settings.DLQ_SLACK_SIGNING_SECRET = SECRET
    monkeypatch.setenv("DLQ_SLACK_SIGNING_SECRET", SECRET)
    settings.DLQ_CONSOLE_URL = "https://console.example"
    api = SlackApi()
    thread = threading.Thread(target=api.server.server.serve_forever, daemon=True)
    thread.start()
    yield api
    api.server.server.shutdown()
    api.server.server.server_close()
