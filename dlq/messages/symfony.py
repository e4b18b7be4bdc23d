"""What Symfony Messenger says about a failed message, with either of its serializers.

Symfony's own Serializer (JSON) sends the message in the body, its class in the `type`
header and each kind of stamp as a JSON list in an `X-Message-Stamp-<class>` header.
PhpSerializer sends `addslashes(serialize($envelope))`: message and stamps in the body,
read here by dlq/messages/phpserial.py (never unserialized into objects).

Symfony retries a failed message through delay queues that dead-letter it back into the
transport's queue, and sends one that exhausted its retries to the failure transport by
publishing it, with the received message's headers (so the `x-death` entries are all the
delay queues' TTL expiries) and with the routing key of the queue it was consumed from.
That queue is where the handler failed; a replay to `original` goes back to it through the
default exchange, as Symfony's own retries do.
"""

import json
from dataclasses import dataclass, field
from datetime import datetime

from dlq.broker.codec import plain
from dlq.messages import phpserial

STAMP_HEADER = "X-Message-Stamp-"
STAMPS = "Symfony\\Component\\Messenger\\Stamp\\"
ERROR_DETAILS = STAMPS + "ErrorDetailsStamp"
REDELIVERY = STAMPS + "RedeliveryStamp"
SENT_TO_FAILURE = STAMPS + "SentToFailureTransportStamp"
DELAY = STAMPS + "DelayStamp"
ENVELOPE = "Symfony\\Component\\Messenger\\Envelope"
# The start of a PhpSerializer body: addslashes(serialize($envelope)).
PHP_BODY_START = b'O:36:\\"' + ENVELOPE.replace("\\", "\\\\").encode()
# A replay removes this header: Symfony drops a message that fails again while it says the
# message was already sent to the failure transport (dlq/actions/replay.py).
SENT_TO_FAILURE_HEADER = STAMP_HEADER + SENT_TO_FAILURE
# death_reason of a message Symfony sent to its failure transport: its handler failed.
HANDLER_FAILED = "handler_failed"


@dataclass
class Envelope:
    """The stamps that matter for a failure, from headers or from a PHP-serialized body."""

    serializer: str  # "json" or "php"
    message_type: str = ""
    message: list = field(default_factory=list)  # (name, value as text) pairs (php)
    exception_type: str = ""
    exception_message: str = ""
    exception_code: int | None = None
    exception_trace: str = ""
    retries: list[dict] = field(default_factory=list)  # {"count", "at"} per RedeliveryStamp
    delays_ms: list[int] = field(default_factory=list)
    failed_transport: str | None = None  # the transport it failed on, once sent to failure

    @property
    def retry_count(self) -> int | None:
        counts = [r["count"] for r in self.retries if isinstance(r.get("count"), int)]
        return max(counts) if counts else None


def read(headers: dict, body: bytes) -> Envelope | None:
    """The envelope of a stored message (typed headers), for the message page."""
    text = {}
    for key, value in headers.items():
        if key == "type" or key.startswith(STAMP_HEADER):
            value = plain(value)
            if isinstance(value, bytes):  # as deaths.py reads them
                value = value.decode("utf-8", "replace")
            if isinstance(value, str):
                text[key] = value
    return from_headers(text) or from_body(body)


def from_headers(text: dict[str, str]) -> Envelope | None:
    """The JSON serializer's stamps (`text`: the message's string headers)."""
    stamps = {
        name[len(STAMP_HEADER) :]: _json_list(value)
        for name, value in text.items()
        if name.startswith(STAMP_HEADER)
    }
    if not stamps:
        return None
    envelope = Envelope("json", message_type=text.get("type", ""))
    _read_stamps(envelope, stamps)
    return envelope


def from_body(body: bytes) -> Envelope | None:
    """A PhpSerializer body's envelope; None for any other body or one that is refused."""
    if not body.startswith(PHP_BODY_START):
        return None
    try:
        value = phpserial.loads(phpserial.unslash(body))
    except (phpserial.Refused, RecursionError):
        return None
    if not isinstance(value, phpserial.PhpObject) or value.class_name != ENVELOPE:
        return None
    message = value.properties.get("message")
    stamps = value.properties.get("stamps")
    envelope = Envelope("php")
    if isinstance(message, phpserial.PhpObject):
        envelope.message_type = message.class_name
        envelope.message = [(str(k), _shown(_plain(v))) for k, v in message.properties.items()]
    if isinstance(stamps, dict):
        _read_stamps(
            envelope,
            {str(name): [_plain(s) for s in _values(items)] for name, items in stamps.items()},
        )
    return envelope


def _read_stamps(envelope: Envelope, stamps: dict[str, list]) -> None:
    """Stamps by class name, each a list of property dicts, oldest first."""
    errors = [s for s in stamps.get(ERROR_DETAILS, []) if isinstance(s, dict)]
    redeliveries = [s for s in stamps.get(REDELIVERY, []) if isinstance(s, dict)]
    if errors:
        last = errors[-1]
        envelope.exception_type = _text(last.get("exceptionClass"))
        envelope.exception_message = _text(last.get("exceptionMessage"))
        code = last.get("exceptionCode")
        envelope.exception_code = code if _is_int(code) else None
        envelope.exception_trace = _trace(last.get("flattenException"))
    else:
        _error_before_5_2(envelope, redeliveries)
    for stamp in redeliveries:
        if _is_int(stamp.get("retryCount")):
            envelope.retries.append(
                {"count": stamp["retryCount"], "at": _text(stamp.get("redeliveredAt"))}
            )
    for stamp in stamps.get(DELAY, []):
        if isinstance(stamp, dict) and _is_int(stamp.get("delay")):
            envelope.delays_ms.append(stamp["delay"])
    sent = [s for s in stamps.get(SENT_TO_FAILURE, []) if isinstance(s, dict)]
    if sent:
        envelope.failed_transport = _text(sent[-1].get("originalReceiverName"))


def _error_before_5_2(envelope: Envelope, redeliveries: list[dict]) -> None:
    """Symfony 4.4 to 5.1 had no ErrorDetailsStamp: the error is in the last RedeliveryStamp
    that names one. 5.4 writes a date into that field: not an error message."""
    for stamp in reversed(redeliveries):
        message = _text(stamp.get("exceptionMessage"))
        if message and not _is_date(message):
            envelope.exception_message = message
            flat = stamp.get("flattenException")
            envelope.exception_type = _text(flat.get("class")) if isinstance(flat, dict) else ""
            envelope.exception_trace = _trace(flat)
            return


def _trace(flat) -> str:
    """FlattenException's trace: traceAsString, or trace_as_string as the framework's
    normalizer writes it."""
    if not isinstance(flat, dict):
        return ""
    return _text(flat.get("traceAsString")) or _text(flat.get("trace_as_string"))


def _is_date(text: str) -> bool:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _json_list(value: str) -> list:
    try:
        stamps = json.loads(value)
    except (ValueError, RecursionError):
        return []
    return stamps if isinstance(stamps, list) else [stamps]


def _values(items) -> list:
    return list(items.values()) if isinstance(items, dict) else []


def _plain(value):
    """PHP values as JSON-like Python: an object is its properties (a date, its text)."""
    if isinstance(value, phpserial.PhpObject):
        if value.class_name in ("DateTimeImmutable", "DateTime"):
            return _text(value.properties.get("date"))
        return {str(k): _plain(v) for k, v in value.properties.items()}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _shown(value) -> str:
    """A property's value as the page shows it: text as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _text(value) -> str:
    return value if isinstance(value, str) else ""
