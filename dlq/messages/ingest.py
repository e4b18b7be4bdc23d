"""From a delivery to the row that stores it: pure, no I/O, safe on hostile input."""

import gzip
import hashlib
import json
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime

import orjson

from dlq.broker.codec import plain
from dlq.broker.properties import properties_to_json
from dlq.messages import deaths, traces
from dlq.text import clean

SEARCH_BODY_BYTES = 64 * 1024
QUORUM_DELIVERY_HEADERS = ("x-delivery-count", "x-acquired-count")


def _unserialisable(value):
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


# json.dumps's own C encoder, made once: json.dumps sets one up per call, with a table of
# the containers it has seen (decoded headers cannot be circular), which is half its time
# on a message's headers. Its text is the stored format of 0.1.0 (see legacy_fingerprint).
_C = json.encoder.c_make_encoder
_ASCII = json.encoder.encode_basestring_ascii
_ENCODE = _C and _C(None, _unserialisable, _ASCII, None, ": ", ", ", False, False, True)


def legacy_dumps(value) -> str:
    """json.dumps(value), faster: ", " and ": " separators, non-ASCII escaped."""
    return "".join(_ENCODE(value, 0)) if _ENCODE else json.dumps(value)


def dumps(value) -> str:
    """Compact JSON text of decoded headers and properties, with UTF-8 as it is.

    orjson takes a tenth of the time of json's C encoder, and the drainer encodes every
    message's headers and properties (bench/drain.py). A header name that was not UTF-8
    is kept with surrogate escapes (codec.decode_table), which orjson refuses: those few
    take the escaped ASCII form instead. Both are JSON that json.loads reads the same.
    """
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate, or a number out of range
        return legacy_dumps(value)


@dataclass(slots=True)
class Delivery:
    queue: str
    vhost: str
    exchange: str
    routing_key: str
    redelivered: bool
    properties: object  # amqp.TypedProperties
    body: bytes
    quorum: bool = False
    row: dict | None = None  # build_row's, made as it arrived (dlq/drain/drainer.py)


def _strings(value, out: list) -> None:
    if isinstance(value, dict):
        if value.get("type") in ("table", "array"):
            items = value.get("value")
            for item in items.values() if isinstance(items, dict) else items or ():
                _strings(item, out)
        elif isinstance(value.get("value"), str):
            out.append(value["value"])


def body_text(body: bytes, content_encoding: str, limit: int | None = None) -> str | None:
    """The body as text when it is text (gzip is decoded for reading only), else None."""
    data = body if limit is None else body[:limit]
    if content_encoding == "gzip" and body[:2] == b"\x1f\x8b":
        try:
            if limit is None:
                data = gzip.decompress(body)
            else:  # never inflate more than is read: a small gzip body can expand to gigabytes
                inflate = zlib.decompressobj(wbits=31)
                data = inflate.decompress(body, limit)
                if len(data) < limit and not inflate.eof:
                    return None  # cut short or not gzip after all
        except (OSError, EOFError, zlib.error):
            return None
    try:
        return data.decode()
    except UnicodeDecodeError as e:
        if limit is not None and e.start >= len(data) - 3:  # cut inside a character
            return data[: e.start].decode()
        return None


def fold(text: str) -> str:
    """The case a search compares in. Search texts are stored folded and terms are folded
    alike, so the scan of what the indexer has not reached yet is a plain LIKE: folding
    every row's text in the database (UPPER ... LIKE UPPER) was three quarters of its time.
    Unicode case folding, character by character (unlike lower(), which writes a final
    sigma by its context), so a folded term is found wherever its letters are."""
    return text.casefold()


def search_text(body: bytes, encoding: str, headers: dict) -> str:
    """What a search (`q`) looks in: the body's text and the headers, folded."""
    parts = [body_text(body, encoding, SEARCH_BODY_BYTES) or ""]
    for key, value in headers.items():
        values: list[str] = []
        if key != "x-death":  # the broker's own history: its queues are columns already
            _strings(value, values)
        parts.append(f"{key}={' '.join(values)}" if values else key)
    return fold(clean("\n".join(parts), limit=None))


def _stable_headers_json(d: Delivery, headers: dict, headers_json: str, encode=dumps) -> str:
    """The headers as the fingerprint sees them: the same on every delivery of a message.

    A quorum parking queue rewrites x-delivery-count (0, 1, 2...) on each delivery, so a
    redelivery after a crash between commit and ack would otherwise not match its stored row.
    """
    if not d.quorum or not any(k in headers for k in QUORUM_DELIVERY_HEADERS):
        return headers_json
    return encode({k: v for k, v in headers.items() if k not in QUORUM_DELIVERY_HEADERS})


def fingerprint(d: Delivery, props_json: str, headers_json: str) -> str:
    """SHA-256 of vhost, queue, properties, headers (each followed by a NUL byte), body."""
    text = f"{d.vhost}\x00{d.queue}\x00{props_json}\x00{headers_json}\x00"
    return hashlib.sha256(text.encode("utf-8", "surrogateescape") + d.body).hexdigest()


def legacy_fingerprint(d: Delivery) -> str:
    """The fingerprint as 0.1.0 made it, of json.dumps's text of the same values.

    A drainer of 0.1.0 that crashed between a commit and its ack leaves rows with such
    fingerprints in a pending batch; their redeliveries, drained after an upgrade, must
    still be recognised (store.py). Only redeliveries pay for this.
    """
    headers = d.properties.headers or {}
    headers_json = legacy_dumps(headers)
    stable = _stable_headers_json(d, headers, headers_json, legacy_dumps)
    return fingerprint(d, legacy_dumps(properties_to_json(d.properties)), stable)


def fit(value: int | None) -> int | None:
    """Counts go into 32-bit columns; a forged huge value must not poison the batch."""
    return None if value is None else max(-(2**31), min(value, 2**31 - 1))


def _whole(value) -> int | None:
    """An int, or a string of at most 19 ASCII digits; junk ("²", "1e3", 5000 digits) is None."""
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) <= 19:
        return int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _origin(headers: dict) -> tuple[int | None, int]:
    origin_id = _whole(plain(headers.get("dlq-origin-id")))
    count = _whole(plain(headers.get("dlq-replay-count")))
    if origin_id is not None and not 0 < origin_id < 2**63:
        origin_id = None
    return origin_id, max(count or 0, 0)


def death_columns(
    headers: dict, properties: dict, vhost: str, routing_key: str, body: bytes, quorum: bool
) -> dict:
    """The columns derived from how and why a message died (dlq/messages/deaths.py), from
    its typed headers, its properties as properties_to_json gives them, the routing key it
    was delivered with and its body. The drainer stores them on arrival and dlq_backfill
    derives them again (dlq/messages/backfill.py) through this one function, so a message
    stored either way gets the same values, and the same failure group above all."""
    death = deaths.read(headers, quorum, properties, routing_key, body)
    keys = [clean(k) for k in death.original_routing_keys]
    return {
        "original_exchange": None
        if death.original_exchange is None
        else clean(death.original_exchange),
        "original_routing_keys_json": dumps(keys),
        "original_routing_key": keys[0] if keys else "",
        "failed_queue": clean(death.failed_queue),
        "death_reason": clean(death.reason, 32),
        "death_count": fit(death.count),
        "delivery_count": fit(death.delivery_count),
        "first_death_at": death.first_death_at,
        "exception_type": clean(death.exception_type),
        "exception_message": clean(death.exception_message, None),
        "exception_stacktrace": clean(death.exception_stacktrace, None),
        "message_type": clean(death.message_type),
        "group": death.group(vhost),
    }


def build_row(d: Delivery, received_at: datetime | None = None) -> dict:
    props = properties_to_json(d.properties)
    headers = d.properties.headers or {}
    props_json = dumps(props)
    headers_json = dumps(headers)
    routing_key = d.routing_key if isinstance(d.routing_key, str) else ""
    origin_id, replay_count = _origin(headers)
    return {
        "queue": d.queue,
        "vhost": d.vhost,
        "status": "parked",
        "received_at": received_at or datetime.now(UTC),
        "body": d.body,
        "size": len(d.body),
        "properties_json": props_json,
        "headers_json": headers_json,
        "message_id": clean(props.get("message_id")),
        "correlation_id": clean(props.get("correlation_id")),
        "content_type": clean(props.get("content_type")),
        "content_encoding": clean(props.get("content_encoding")),
        "exchange": clean(d.exchange),
        "routing_key": clean(d.routing_key),
        **death_columns(headers, props, d.vhost, routing_key, d.body, d.quorum),
        "trace_id": traces.trace_id(headers),
        "replay_count": fit(replay_count),
        "previous_id": origin_id,  # resolved against the database when stored
        "lineage_id": None,
        "fingerprint": fingerprint(d, props_json, _stable_headers_json(d, headers, headers_json)),
        "drain_batch": None,
        "search_text": search_text(d.body, props.get("content_encoding") or "", headers),
        "drain_note": "",
    }


def fallback_row(d: Delivery, error: Exception) -> dict:
    """A row for a message whose headers could not be read: its bytes, and the reason."""
    try:
        props_json = json.dumps(properties_to_json(d.properties))
        headers_json = json.dumps(d.properties.headers or {})
        note = ""
    except (TypeError, ValueError, RecursionError) as e:
        props_json, headers_json, note = "{}", "{}", f" (headers not storable: {e})"
    row = build_row(
        Delivery(
            d.queue, d.vhost, d.exchange, d.routing_key, d.redelivered, _Empty(), d.body, d.quorum
        )
    )
    row.update(
        properties_json=props_json,
        headers_json=headers_json,
        fingerprint=fingerprint(d, props_json, headers_json),
        drain_note=clean(f"headers could not be read: {error!r}{note}", None),
    )
    return row


class _Empty:
    headers = None

    def __getattr__(self, name):
        return None
