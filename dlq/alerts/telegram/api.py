"""A small Telegram Bot API client over the transports' HTTP base: getMe, getUpdates,
answerCallbackQuery, editMessageText, sendMessage, at DLQ_TELEGRAM_API_URL.

The token is part of every URL and of nothing else: no error or log line says a URL, and
errors are in the console's own words (transports.py), never what Telegram answered, but
for the few answers the console must tell apart (`ApiError.reason`).

`Call` is a request to make after a transaction commits (an answer, an edit): `make` sends
them and runs each one's `then` when it is settled."""

import logging
from collections.abc import Callable
from dataclasses import dataclass

from dlq.alerts.transports import TIMEOUT_S, Response, TelegramNotifier, TransportError

log = logging.getLogger("dlq.telegram")

CONFLICT, UNCHANGED = "conflict", "unchanged"


class ApiError(TransportError):
    """A failed call; `reason` is CONFLICT (getUpdates while a webhook is set), UNCHANGED
    (an edit to what the message already says) or ""."""

    reason = ""


class BotApi(TelegramNotifier):
    max_body = 1024 * 1024  # getUpdates: up to UPDATES_LIMIT updates of up to 4096 characters

    def __init__(self, api_url: str, token: str):
        self.base = f"{api_url.rstrip('/')}/bot{token}"

    def call(self, method: str, payload: dict | None = None, wait: float = 0.0):
        """The call's `result`; ApiError (in our words) when it failed."""
        self.timeout = TIMEOUT_S + wait
        try:
            response = self.post_json(f"{self.base}/{method}", payload or {})
        except ApiError:
            raise
        except TransportError as e:  # no answer at all
            raise ApiError(str(e), status=e.status) from None
        body = response.json()
        if body.get("ok") is not True:
            raise ApiError(f"telegram answered {method} without ok", status=response.status)
        return body.get("result")

    def failure(self, response: Response) -> ApiError:
        error = super().failure(response)
        made = ApiError(str(error), permanent=error.permanent, retry_after=error.retry_after,
                        status=error.status)  # fmt: skip
        description = str(response.json().get("description") or "").lower()
        if response.status == 409:
            made.reason = CONFLICT
            made.args = ("telegram answered HTTP 409: a webhook is set for this bot",)
        elif response.status == 400 and "message is not modified" in description:
            made.reason = UNCHANGED
        return made

    def get_me(self) -> dict:
        found = self.call("getMe")
        return found if isinstance(found, dict) else {}

    def get_updates(self, offset: int, wait: int, limit: int) -> list:
        payload = {"offset": offset, "timeout": wait, "limit": limit,
                   "allowed_updates": ["message", "callback_query"]}  # fmt: skip
        found = self.call("getUpdates", payload, wait=wait)
        return found if isinstance(found, list) else []


@dataclass
class Call:
    """A Bot API call to make once the transaction that decided it has committed."""

    token: str
    method: str
    payload: dict
    then: Callable[[], None] | None = None  # once done (or refused for good: never retried)


def make(api_url: str, calls: list[Call]) -> None:
    for call in calls:
        try:
            BotApi(api_url, call.token).call(call.method, call.payload)
        except ApiError as e:
            if e.reason != UNCHANGED:
                log.warning("telegram call failed",
                            extra={"method": call.method, "error": str(e)[:300]})  # fmt: skip
            if not (e.reason == UNCHANGED or e.permanent):
                continue  # a transient failure: an edit is tried again by the next pass
        if call.then is not None:
            call.then()
