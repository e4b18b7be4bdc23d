"""Reading why a message died: `x-death` and the failure headers of common frameworks.

Everything here is pure and total: headers are untrusted (forged or malformed `x-death`
exist), so a value of the wrong shape is ignored, never an exception.
See shared/rabbitmq-facts.md for the broker behaviour these rules follow.
"""

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import unquote, urlsplit

from dlq.broker.codec import plain
from dlq.messages import masstransit, symfony

RETRY_COUNTER_HEADERS = ("retry-count", "x-retry-count", "x-retries", "MT-Fault-RetryCount")


@dataclass
class Death:
    reason: str = ""
    count: int = 0
    failed_queue: str = ""
    original_exchange: str | None = None
    original_routing_keys: list[str] = field(default_factory=list)
    first_death_at: datetime | None = None
    delivery_count: int | None = None
    exception_type: str = ""
    exception_message: str = ""
    exception_stacktrace: str = ""
    message_type: str = ""
    x_death: list[dict] = field(default_factory=list)

    def group(self, vhost: str) -> str:
        """The failure fingerprint: same vhost, same place, same reason, same error, same kind
        of message. Never the body or the exception message, which carry ids and would split
        a group. Vhost `/` adds nothing to the key: groups of 0.4 and before keep their ids.
        """
        parts = [self.failed_queue, self.reason, self.exception_type, self.message_type]
        if vhost != "/":
            parts.append(vhost)  # the same queue name in two vhosts is two places
        key = "\x1f".join(parts)
        return hashlib.sha1(key.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _str(value) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else ""


_INTEGER = re.compile(r"-?[0-9]{1,18}")


def _int(value) -> int | None:
    """An integer, or a string of ASCII digits (forged headers: "²", "--5", 5000 digits)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str | bytes) and _INTEGER.fullmatch(text := _str(value).strip()):
        return int(text)
    return None


def _items(typed, kind: str) -> list | dict | None:
    """The items of a typed array or table, as plain(typed) would find them, unconverted.

    x-death is read for every message: converting it whole (plain) built every nested
    value anew only to read a few of them.
    """
    if not isinstance(typed, dict) or "base64" in typed or typed.get("type") != kind:
        return None
    items = typed.get("value")
    return items if isinstance(items, list if kind == "array" else dict) else None


def x_death_entries(headers: dict) -> list[dict]:
    """The well-formed `x-death` entries, most recent first, as plain dicts."""
    entries = _items(headers.get("x-death"), "array")
    if entries is None:
        return []
    good = []
    for typed_entry in entries:
        entry = _items(typed_entry, "table")
        if entry is None:
            continue
        queue = _str(plain(entry.get("queue")))
        if not queue:
            continue
        exchange, count = plain(entry.get("exchange")), plain(entry.get("count"))
        keys = _items(entry.get("routing-keys"), "array")
        # a long from the broker; anything else is forged
        count = count if isinstance(count, int) and not isinstance(count, bool) else 0
        time = plain(entry.get("time"))
        good.append(
            {
                "queue": queue,
                "reason": _str(plain(entry.get("reason"))),
                # An entry exists because the message died there at least once.
                "count": count if count > 0 else 1,
                "time": time if isinstance(time, datetime) else None,
                "exchange": _str(exchange),
                # "" is the default exchange; a forged entry may name none at all.
                "exchange_known": isinstance(exchange, str | bytes),
                "routing_keys": [] if keys is None else _texts(keys),
                "original_expiration": _str(plain(entry.get("original-expiration"))) or None,
            }
        )
    return good


def _texts(items: list) -> list[str]:
    return [_str(key) for item in items if isinstance(key := plain(item), str | bytes)]


def _from_x_death(death: Death, headers: dict, entries: list[dict]) -> None:
    death.x_death = entries
    death.count = sum(e["count"] for e in entries)
    # x-death[0] is the most recent death; 3.13+ also says so in x-last-death-*.
    last_queue = _str(plain(headers.get("x-last-death-queue")))
    last_reason = _str(plain(headers.get("x-last-death-reason")))
    death.failed_queue = last_queue or entries[0]["queue"]
    death.reason = last_reason or entries[0]["reason"]
    if death.reason == "expired":
        # A TTL expiry after a failure is the wait in a retry or delay queue (the delayed-retry
        # design, Symfony's delay queues), not where the message failed: the most recent
        # death of another reason is.
        failure = next((e for e in entries if e["reason"] != "expired"), None)
        if failure is not None:
            death.failed_queue, death.reason = failure["queue"], failure["reason"]
    # The first death is named by x-first-death-*; x-death[-1] is only the oldest entry
    # still listed (a repeated queue+reason moves to the front).
    first_queue = _str(plain(headers.get("x-first-death-queue")))
    first_reason = _str(plain(headers.get("x-first-death-reason")))
    named = next(
        (e for e in entries if e["queue"] == first_queue and e["reason"] == first_reason), None
    )
    first = named or entries[-1]
    first_exchange = plain(headers.get("x-first-death-exchange"))
    death.original_exchange = (
        _str(first_exchange)
        if isinstance(first_exchange, str | bytes)
        else (first["exchange"] if first["exchange_known"] else None)
    )
    death.original_routing_keys = first["routing_keys"]
    # Only the entry the broker named: without x-first-death-* the oldest listed entry may be
    # one a client supplied (3.x keeps it), and its time must not pass for the first death.
    death.first_death_at = named["time"] if named else None


def _queue_from_address(address: str) -> str:
    """MassTransit's input address: rabbitmq://host/vhost/queue?options -> queue."""
    path = urlsplit(address).path
    return unquote(path.rstrip("/").rsplit("/", 1)[-1]) if path else ""


# The framework headers read below; only these are converted (this runs for every message).
FRAMEWORK_HEADERS = frozenset(
    [
        "x-exception-message",
        "x-exception-stacktrace",
        "x-original-exchange",
        "x-original-routingKey",
        "MT-Reason",
        "MT-Fault-ExceptionType",
        "MT-Fault-Message",
        "MT-Fault-StackTrace",
        "MT-Fault-MessageType",
        "MT-MessageType",
        "MT-Fault-InputAddress",
        "NServiceBus.ExceptionInfo.ExceptionType",
        "NServiceBus.ExceptionInfo.Message",
        "NServiceBus.ExceptionInfo.StackTrace",
        "NServiceBus.EnclosedMessageTypes",
        "NServiceBus.FailedQ",
        "type",
        "__TypeId__",
        "task",
    ]
)


def _framework_text(h: dict) -> dict[str, str]:
    text = {}
    for key, value in h.items():
        if key in FRAMEWORK_HEADERS or key.startswith("X-Message-Stamp-"):
            value = plain(value)
            if isinstance(value, str | bytes):
                text[key] = _str(value)
    return text


def _from_frameworks(
    death: Death, text: dict, envelope: symfony.Envelope | None, routing_key: str
) -> None:
    """Failure details from Spring AMQP, MassTransit, NServiceBus, Symfony and Celery."""
    # Spring AMQP (RepublishMessageRecoverer)
    if "x-exception-message" in text or "x-exception-stacktrace" in text:
        trace = text.get("x-exception-stacktrace", "")
        death.exception_stacktrace = trace
        death.exception_message = text.get("x-exception-message", "")
        death.exception_type = _java_exception_type(trace, death.exception_message)
    # MassTransit (<queue>_error)
    if "MT-Fault-ExceptionType" in text or "MT-Reason" in text:
        death.exception_type = text.get("MT-Fault-ExceptionType", "")
        death.exception_message = text.get("MT-Fault-Message", "")
        death.exception_stacktrace = text.get("MT-Fault-StackTrace", "")
        death.reason = death.reason or text.get("MT-Reason", "")
    # NServiceBus (error queue)
    prefix = "NServiceBus.ExceptionInfo."
    if prefix + "ExceptionType" in text:
        death.exception_type = text.get(prefix + "ExceptionType", "")
        death.exception_message = text.get(prefix + "Message", "")
        death.exception_stacktrace = text.get(prefix + "StackTrace", "")
    if envelope is not None:
        _from_symfony(death, envelope, routing_key)
    _original_route_without_x_death(death, text)


def _framework_type(text: dict, envelope: symfony.Envelope | None, props: dict, body: bytes) -> str:
    """The message's type as its framework names it, from whatever that framework wrote:
    a type header says the type whether or not the framework also moved the message and
    wrote why (a message the broker dead-lettered carries no exception headers)."""
    # MassTransit: its error queue's header, a raw serializer's header ("urn:...;urn:..."),
    # else the envelope in the body (its default serializer).
    mt_type = text.get("MT-Fault-MessageType") or text.get("MT-MessageType")
    if mt_type:
        return mt_type.split(";")[0]
    # NServiceBus: "Type, Assembly, Version=...;Interface, Assembly", the message's own first
    enclosed = text.get("NServiceBus.EnclosedMessageTypes", "")
    if enclosed:
        return enclosed.split(";")[0].split(",")[0].strip()
    if envelope is not None and envelope.message_type:  # Symfony, either serializer
        return envelope.message_type
    names = ("type", "__TypeId__", "task")  # Symfony's JSON serializer, Spring, Celery
    named = next((text[n] for n in names if text.get(n)), "")
    return named or masstransit.message_type(
        body, props.get("content_type"), props.get("content_encoding")
    )


def _java_exception_type(trace: str, message: str) -> str:
    """The exception class in a Java stack trace that Spring's RepublishMessageRecoverer wrote.

    The trace is usually of the ListenerExecutionFailedException wrapper (the same for every
    failure) and x-exception-message is the message of its cause: the type is the exception
    that carries that message, else the wrapper's first "Caused by:".
    """
    lines = trace.strip().splitlines()
    # Not indented: an indented "Caused by:" belongs to a suppressed exception.
    heads = lines[:1] + [line[10:].strip() for line in lines if line.startswith("Caused by:")]
    pairs = [(kind.strip(), text.strip()) for kind, _, text in (h.partition(":") for h in heads)]
    wanted = message.strip().splitlines()[0] if message.strip() else ""
    for kind, text in pairs:
        if wanted and text == wanted:
            return kind
    if len(pairs) > 1 and pairs[0][0].endswith("ListenerExecutionFailedException"):
        return pairs[1][0]
    return pairs[0][0] if pairs else ""


def _from_symfony(death: Death, envelope: symfony.Envelope, routing_key: str) -> None:
    if envelope.exception_type or envelope.exception_message:
        death.exception_type = envelope.exception_type
        death.exception_message = envelope.exception_message
        death.exception_stacktrace = envelope.exception_trace or death.exception_stacktrace
    if envelope.retry_count is not None:
        # The highest: sending to the failure transport adds one with a count of 0.
        death.delivery_count = max(envelope.retry_count, death.delivery_count or 0)
    queue = _symfony_failed_on(death, routing_key)
    if envelope.failed_transport is not None and queue:
        # Sent to the failure transport with the routing key of the queue its handler
        # failed on; x-death holds only the delay queues' expiries (symfony.py).
        death.failed_queue, death.reason = queue, symfony.HANDLER_FAILED
        death.original_exchange, death.original_routing_keys = "", [queue]


def _symfony_failed_on(death: Death, routing_key: str) -> str:
    """The routing key Symfony sent the message to its failure transport with: the one it
    was delivered with, unless it was dead-lettered after that (a failure queue whose
    dead-letter exchange rewrites the key): that death's entry keeps the key it had."""
    after = next((e for e in death.x_death if e["reason"] != "expired"), None)
    if after is not None and after["routing_keys"]:
        return after["routing_keys"][0]
    return routing_key


def _original_route_without_x_death(death: Death, text: dict) -> None:
    if death.original_exchange is not None:
        return
    if "x-original-exchange" in text:  # Spring AMQP
        death.original_exchange = text["x-original-exchange"]
        key = text.get("x-original-routingKey")
        death.original_routing_keys = [] if key is None else [key]
        return
    queue = (
        _queue_from_address(text.get("MT-Fault-InputAddress", ""))
        or text.get("NServiceBus.FailedQ", "").split("@")[0]
    )
    if queue:
        # Both frameworks bind an exchange of the queue's name; the default exchange
        # reaches the same queue without relying on that binding.
        death.failed_queue = death.failed_queue or queue
        death.original_exchange = ""
        death.original_routing_keys = [queue]


def _delivery_count(h: dict, parking_queue_is_quorum: bool) -> int | None:
    # On a quorum parking queue x-delivery-count counts the drainer's own redeliveries.
    names = RETRY_COUNTER_HEADERS
    if not parking_queue_is_quorum:
        names = ("x-delivery-count", *names)
    for name in names:
        count = _int(plain(h[name])) if name in h else None  # most are absent: no call
        if count is not None:
            return count
    retries = _int(plain(h.get("retries")))  # Celery protocol 2
    return retries if "task" in h else None


def read(
    headers: dict,
    parking_queue_is_quorum: bool = False,
    properties: dict | None = None,
    routing_key: str = "",
    body: bytes = b"",
) -> Death:
    """Everything the console derives from a message's headers (and its properties, as
    properties_to_json gives them: the AMQP `type` is the message type when no framework
    names one, the content type says whether the body is MassTransit's envelope; the
    routing key it was delivered with and its body, for Symfony Messenger)."""
    death = Death()
    props = properties or {}
    entries = x_death_entries(headers)
    if entries:
        _from_x_death(death, headers, entries)
    text = _framework_text(headers)
    envelope = symfony.from_headers(text) or symfony.from_body(body)
    _from_frameworks(death, text, envelope, routing_key)
    death.message_type = _framework_type(text, envelope, props, body)
    amqp_type = props.get("type")
    if not death.message_type and isinstance(amqp_type, str):  # {"base64"}: not UTF-8
        death.message_type = amqp_type
    count = _delivery_count(headers, parking_queue_is_quorum)
    death.delivery_count = death.delivery_count if count is None else count
    return death
