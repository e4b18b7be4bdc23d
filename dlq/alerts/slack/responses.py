"""Answering a press through the interaction's `response_url` (run by the Celery task
`dlq.tasks.slack_respond`, so the interaction itself is answered at once).

The URL comes from a signed request, yet it is still a URL the console is told to post to:
it goes through the same destination check, pinned address and no-redirect rule as a
typed Slack webhook (dlq/alerts/destinations.py). Failures are logged in the console's
words, never with the URL (it is a capability: anyone holding it may post as the app)."""

import logging
from urllib.parse import urlsplit

from dlq.alerts import destinations
from dlq.alerts.transports import HttpNotifier, TransportError, retry_delay

log = logging.getLogger("dlq.slack")


class ResponseUrl(HttpNotifier):
    kind = "slack"

    def __init__(self):
        self.pin = destinations.pinned_address


def acceptable(url) -> bool:
    """An http(s) URL with a host; where it may go is checked when it is posted to."""
    if not isinstance(url, str) or len(url) > 2000:
        return False
    try:
        parts = urlsplit(url)
        return parts.scheme in ("https", "http") and bool(parts.hostname)
    except ValueError:
        return False


def post(url: str, message: dict, try_no: int = 1) -> float | None:
    """Post `message` to the response URL: the seconds to wait before another try (Slack
    failed, or asked to wait), None once it took it or the tries are used up (a response
    URL stays valid for 30 minutes, so the alerts' few tries and waits fit)."""
    if not acceptable(url):
        log.warning("slack reply not sent: the response URL is not an http(s) URL")
        return None
    try:
        ResponseUrl().post_json(url, message)
    except TransportError as e:
        wait = retry_delay(e, try_no)
        log.warning("slack reply not sent", extra={"error": str(e), "http_status": e.status,
                                                   "try": try_no, "retry_in_s": wait})  # fmt: skip
        return wait
    return None
