"""The trace a message belongs to, from the tracing headers producers put on it.

Read for every drained message (ingest.build_row) and again by dlq_backfill: pure, total and
cheap. Headers are untrusted, so a value of the wrong type, shape, length or case gives "",
never an exception. A trace id is lower-case hex, 16 or 32 digits, never all zeros.

The first header, in this order, that holds a well-formed id gives it (a malformed one is
passed over, as a tracer ignores it):

1. W3C Trace Context `traceparent`: `version-traceid-parentid-flags`, all lower-hex; version
   `ff` is invalid; version `00` has nothing after the flags, a later version may add
   `-...`; an all-zero trace id or parent id makes the header invalid.
2. B3 single header `b3`: `traceid-spanid[-sampled[-parentspanid]]`, trace id 16 or 32
   lower-hex (a sampling decision alone, `b3: 0`, names no trace).
3. B3 multi header `X-B3-TraceId`: 16 or 32 lower-hex.
4. Jaeger `uber-trace-id`: `traceid:spanid:parentid:flags` (`:` may come URL-encoded as
   `%3A`), hex of any case, up to 32 digits with the leading zeros left out. Normalised as
   Jaeger prints it: lower-case, left-padded with zeros to 16 digits, or to 32 when the
   high 64 bits are set.
5. Sentry `sentry-trace`: `traceid-spanid[-sampled]`, 32 and 16 lower-hex.

Header names match in any case (an AMQP header table keeps what the producer wrote:
`Traceparent`, `x-b3-traceid`); of two names that differ only in case, the first in the
table that holds a valid id wins.
"""

import re
from urllib.parse import quote

from django.conf import settings

from dlq.broker.codec import plain

MAX_VALUE = 512  # longer than any valid header; nothing longer is looked at
_HEX = "0123456789abcdef"
_W3C = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(-.*)?", re.S)
_B3 = re.compile(r"([0-9a-f]{32}|[0-9a-f]{16})-[0-9a-f]{16}(?:-[01d](?:-[0-9a-f]{16})?)?")
_B3_ID = re.compile(r"[0-9a-f]{32}|[0-9a-f]{16}")
_JAEGER = re.compile(r"([0-9a-fA-F]{1,32}):([0-9a-fA-F]{1,16}):[0-9a-fA-F]{1,16}:[0-9a-fA-F]{1,3}")
_SENTRY = re.compile(r"([0-9a-f]{32})-[0-9a-f]{16}(?:-[01])?")
_OWS = " \t"  # optional white space around an HTTP header value


def _nonzero(hex_id: str) -> bool:
    return hex_id.strip("0") != ""


def w3c(value: str) -> str:
    m = _W3C.fullmatch(value)
    if not m or m[1] == "ff" or (m[1] == "00" and m[4] is not None):
        return ""
    return m[2] if _nonzero(m[2]) and _nonzero(m[3]) else ""


def b3(value: str) -> str:
    m = _B3.fullmatch(value)
    return m[1] if m and _nonzero(m[1]) else ""


def b3_trace_id(value: str) -> str:
    return value if _B3_ID.fullmatch(value) and _nonzero(value) else ""


def jaeger(value: str) -> str:
    m = _JAEGER.fullmatch(value.replace("%3A", ":").replace("%3a", ":"))
    if not m or not _nonzero(m[2]):
        return ""
    number = int(m[1], 16)
    if not number:
        return ""
    return f"{number:016x}" if number < 1 << 64 else f"{number:032x}"


def sentry(value: str) -> str:
    m = _SENTRY.fullmatch(value)
    return m[1] if m and _nonzero(m[1]) else ""


# lower-cased header name -> (precedence, parser)
PARSERS = {
    "traceparent": (0, w3c),
    "b3": (1, b3),
    "x-b3-traceid": (2, b3_trace_id),
    "uber-trace-id": (3, jaeger),
    "sentry-trace": (4, sentry),
}


def text(value) -> str:
    """A header's value as text: a str, or ASCII bytes; anything else (or too long) is ""."""
    if isinstance(value, bytes):
        try:
            value = value.decode("ascii")
        except UnicodeDecodeError:
            return ""
    if not isinstance(value, str) or len(value) > MAX_VALUE:
        return ""
    return value.strip(_OWS)


def parse(name, value) -> str:
    """The trace id one header (plain name and value) names, or ""."""
    known = PARSERS.get(name.lower()) if isinstance(name, str) else None
    return known[1](text(value)) if known else ""


def trace_id(headers: dict) -> str:
    """The trace id the typed headers (as stored) name, by the precedence above, or ""."""
    best, found = len(PARSERS), ""
    for name, typed in headers.items():
        known = PARSERS.get(name.lower()) if isinstance(name, str) else None
        if known is None or known[0] >= best:
            continue
        if candidate := known[1](text(plain(typed))):
            best, found = known[0], candidate
            if best == 0:
                break
    return found


def valid(value: str) -> bool:
    """Is this a trace id as stored: 16 or 32 lower-hex digits, not all zeros?"""
    return len(value) in (16, 32) and not value.strip(_HEX) and _nonzero(value)


def link(trace: str) -> str:
    """DLQ_TRACE_URL with the trace id in it, URL-quoted; "" without either."""
    template = settings.DLQ_TRACE_URL
    if not template or not trace:
        return ""
    return template.replace("{trace_id}", quote(trace, safe=""))
