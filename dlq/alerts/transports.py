"""Slack, Telegram and generic webhook senders over one small HTTP base (what they say is
dlq/alerts/formats.py).

No Django here: a notifier gets its destination (with its secrets) and an `Alert`, makes
ONE request and either returns or raises `TransportError`, which says whether the failure
is permanent (revoked webhook, blocked bot: never retry, switch the channel off) and how
long the server asked us to wait. The bounded retry policy is `retry_delay`; the caller
runs it, because every try is recorded as its own row (dlq/alerts/delivery.py).

No error text quotes what the other end sent, nor the destination's URL or token: every
one is in the console's own words.
"""

import http.client
import json
import socket
import ssl
import urllib.request
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from urllib.error import HTTPError, URLError

from dlq.alerts.formats import Alert, Format
from dlq.alerts.slack import blocks
from dlq.alerts.telegram import render

TIMEOUT_S = 10
MAX_TRIES = 3
# 4xx answers that say "not now" (timed out reading us, too early, too many), not "never":
# retried like a 5xx, never a reason to switch a channel off.
TRANSIENT_4XX = frozenset({408, 425, 429})
BACKOFF_S = (2.0, 10.0)  # waits before the 2nd and 3rd try when the server gives no hint
MAX_WAIT_S = 900.0  # a server asking for a longer pause is not waited for
MAX_BODY = 64 * 1024
USER_AGENT = "dlq-console"


class Refused(OSError):
    """A destination the console will not send to (dlq/alerts/destinations.py); the message
    is the console's own words."""


class TransportError(Exception):
    def __init__(self, message, *, permanent=False, retry_after=None, status=None):
        super().__init__(message)
        self.permanent = permanent
        self.retry_after = retry_after
        self.status = status


def retry_delay(error: TransportError, try_no: int) -> float | None:
    """Seconds to wait before the try after `try_no`, or None when there is none."""
    if error.permanent or try_no >= MAX_TRIES:
        return None
    if error.retry_after is not None:
        return error.retry_after if error.retry_after <= MAX_WAIT_S else None
    return BACKOFF_S[min(try_no, len(BACKOFF_S)) - 1]


# --- the HTTP base ----------------------------------------------------------------------


@dataclass
class Response:
    status: int
    headers: dict
    body: bytes

    def text(self, limit: int = 200) -> str:
        return " ".join(self.body[:2000].decode("utf-8", "replace").split())[:limit]

    def json(self) -> dict:
        try:
            value = json.loads(self.body)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # a redirect is an answer (an error), never followed with our payload


class _Pinned:
    """Connections that go to the address `pin(host, port)` answers, whatever DNS says
    then; the Host header and TLS (SNI, certificate) still name the host."""

    def __init__(self, pin):
        self.pin = pin

    def connection(self, base):
        pin = self.pin

        def make(host, **kwargs):
            made = base(host, **kwargs)
            create = made._create_connection

            def to_pinned(address, *args, **kw):
                return create((pin(address[0], address[1]), address[1]), *args, **kw)

            made._create_connection = to_pinned
            return made

        return make


def _opener_for(pin):
    """No redirects. A destination typed into the console (`pin` given) is reached directly
    at the checked address: a proxy from the environment would connect wherever it liked.
    A configured one (Telegram's API base) goes through the environment's proxy, if any."""
    if pin is None:
        return urllib.request.build_opener(_NoRedirect)
    pinned = _Pinned(pin)

    class Http(urllib.request.HTTPHandler):
        def http_open(self, req):
            return self.do_open(pinned.connection(http.client.HTTPConnection), req)

    class Https(urllib.request.HTTPSHandler):
        def https_open(self, req):
            return self.do_open(
                pinned.connection(http.client.HTTPSConnection), req, context=self._context
            )

    return urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect, Http, Https)


def parse_retry_after(value) -> float | None:
    """Retry-After as seconds (a number of seconds or an HTTP date)."""
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    except OverflowError:  # a JSON integer past a float's range: no hint
        return None
    try:
        when = parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    return max((when - datetime.now(UTC)).total_seconds(), 0.0)


class HttpNotifier:
    kind = "http"
    good = frozenset({200})
    pin = None  # (host, port) -> the checked address to connect to; None: not checked
    timeout = TIMEOUT_S  # seconds; a long poll waits longer (dlq/alerts/telegram/api.py)
    max_body = MAX_BODY  # bytes of an answer read

    def send(self, alert: Alert) -> int:
        """Send one alert with one request; the HTTP status, or TransportError."""
        raise NotImplementedError

    def post_json(self, url: str, payload: dict) -> Response:
        request = urllib.request.Request(
            url,
            data=json.dumps(payload).encode(),
            method="POST",
            headers={"Content-Type": "application/json", "User-Agent": USER_AGENT},
        )
        try:
            with _opener_for(self.pin).open(request, timeout=self.timeout) as answer:
                response = Response(answer.status, dict(answer.headers), answer.read(self.max_body))
        except HTTPError as e:
            with e:
                response = Response(e.code, dict(e.headers or {}), e.read(self.max_body))
        except (URLError, OSError, http.client.HTTPException, ValueError) as e:
            reason = getattr(e, "reason", None) or e
            if isinstance(reason, Refused):  # never sent: the destination is internal
                raise TransportError(str(reason), permanent=True) from None
            raise TransportError(f"connection failed: {connection_problem(reason)}") from None
        if response.status not in self.good:
            raise self.failure(response)
        return response

    def failure(self, response: Response) -> TransportError:
        """The error for a status outside `good`, in the console's own words: what answered
        is never shown or logged (it may hold internal data, or echo a token)."""
        return TransportError(
            f"{self.kind} answered HTTP {response.status}: {answer_meaning(response.status)}",
            permanent=400 <= response.status < 500 and response.status not in TRANSIENT_4XX,
            retry_after=self.retry_after(response),
            status=response.status,
        )

    def retry_after(self, response: Response) -> float | None:
        if response.status != 429:
            return None
        headers = {k.lower(): v for k, v in response.headers.items()}
        return parse_retry_after(headers.get("retry-after"))


class SlackNotifier(HttpNotifier):
    """An incoming webhook. Slack answers 403 invalid_token, 404 channel_not_found or
    no_service, 410 channel_is_archived when the hook is gone for good."""

    kind = "slack"
    limit = 3000  # per section text
    gone = frozenset({403, 404, 410})

    def __init__(self, url: str):
        self.url = url

    def payload(self, alert: Alert) -> dict:
        return blocks.payload(alert)  # with each group's buttons when it has a reference

    def send(self, alert: Alert) -> int:
        return self.post_json(self.url, self.payload(alert)).status

    def failure(self, response: Response) -> TransportError:
        error = super().failure(response)
        error.permanent = response.status in self.gone
        return error


class TelegramNotifier(HttpNotifier):
    """Bot API sendMessage, parse_mode HTML, at a configurable API base; a digest's groups
    numbered, with their buttons (dlq/alerts/telegram/render.py)."""

    kind = "telegram"
    permanent_words = ("chat not found", "bot was blocked", "bot was kicked", "upgraded to a")

    def __init__(self, api_url: str, token: str, chat_id: str):
        self.url = f"{api_url.rstrip('/')}/bot{token}/sendMessage"
        self.chat_id = chat_id

    def payload(self, alert: Alert) -> dict:
        return {"chat_id": self.chat_id, **render.message(alert)}

    def send(self, alert: Alert) -> int:
        response = self.post_json(self.url, self.payload(alert))
        self.answer = response.json()  # the message sent: its id, to edit it later
        return response.status

    def failure(self, response: Response) -> TransportError:
        body = response.json()
        description = str(body.get("description") or response.text())
        parameters = body.get("parameters") if isinstance(body.get("parameters"), dict) else {}
        retry_after = parse_retry_after(parameters.get("retry_after"))
        if retry_after is None:
            retry_after = self.retry_after(response)
        permanent = response.status in (401, 403, 404) or (
            response.status == 400 and any(w in description.lower() for w in self.permanent_words)
        )
        meaning = answer_meaning(response.status)
        if permanent and response.status in (400, 403):
            meaning = "the chat is gone, or the bot was blocked or removed from it"
        return TransportError(
            f"telegram answered HTTP {response.status}: {meaning}",
            permanent=permanent,
            retry_after=retry_after if response.status == 429 else None,
            status=response.status,
        )


class WebhookNotifier(HttpNotifier):
    """POST the alert as JSON. A 4xx is permanent (the endpoint refuses us) but for the
    ones that mean "not now" (TRANSIENT_4XX)."""

    kind = "webhook"
    good = frozenset({200, 201, 202, 204})

    def __init__(self, url: str):
        self.url = url

    def payload(self, alert: Alert) -> dict:
        plain = Format()
        return {
            "source": "dlq-console",
            "title": alert.title,
            "summary": alert.summary,
            "rule": alert.label,
            "url": alert.url,
            "text": "\n".join(plain.lines(alert)),
            "queues": [i.data for i in alert.queues],
            "groups": [i.data for i in alert.groups],
            **alert.facts,
        }

    def send(self, alert: Alert) -> int:
        return self.post_json(self.url, self.payload(alert)).status


def connection_problem(reason) -> str:
    """Why no answer came, in our words: an exception's text can carry what the other end
    sent (a banner, a status line) or the URL with its secrets."""
    if isinstance(reason, TimeoutError | socket.timeout):
        return "timed out"
    if isinstance(reason, ConnectionRefusedError):
        return "refused"
    if isinstance(reason, ConnectionResetError | BrokenPipeError):
        return "closed by the other end"
    if isinstance(reason, ssl.SSLError):
        return "TLS failed (certificate or protocol)"
    if isinstance(reason, socket.gaierror) or "resolve" in str(reason):
        return "the host name does not resolve"
    if isinstance(reason, http.client.HTTPException):
        return "the other end does not speak HTTP"
    return f"{type(reason).__name__}"


def answer_meaning(status: int) -> str:
    """What an HTTP status means for an alert, in our words."""
    if status in (401, 403):
        return "refused: the credentials in the URL or token are not accepted"
    if status in (404, 410):
        return "gone: the webhook or chat no longer exists"
    if status == 429:
        return "rate limited"
    if status in TRANSIENT_4XX:
        return "not now (timed out or too early): tried again"
    if 400 <= status < 500:
        return "the request was refused"
    if status >= 500:
        return "the server failed"
    return "an unexpected answer"


def notifier_for(kind: str, config: dict, telegram_api_url: str, pin=None) -> HttpNotifier:
    """`pin` checks and pins the destinations admins typed (Slack, webhooks); Telegram's
    API base is configuration, not typed in the console."""
    if kind == "slack":
        notifier = SlackNotifier(config["url"])
    elif kind == "telegram":
        return TelegramNotifier(telegram_api_url, config["token"], str(config["chat_id"]))
    elif kind == "webhook":
        notifier = WebhookNotifier(config["url"])
    else:
        raise ValueError(f"unknown channel kind {kind!r}")
    notifier.pin = pin
    return notifier
