"""Message properties on the wire: a content header's flags and values, read into and
written from a props object (`TypedProperties` in dlq/broker/amqp.py, which pika uses for
every content header). Headers are a typed table (dlq/broker/codec.py); a short string
that is not UTF-8 becomes {"base64": "..."}. No pika here.
"""

import base64
import struct

from dlq.broker.codec import decode_table, encode_table, fail, raw_text, wire

_U16 = struct.Struct(">H").unpack_from
_U64 = struct.Struct(">Q").unpack_from


SHORT_STRING_PROPERTIES = [
    "content_type",
    "content_encoding",
    "correlation_id",
    "reply_to",
    "expiration",
    "message_id",
    "type",
    "user_id",
    "app_id",
    "cluster_id",
]


OCTET_PROPERTIES = ("delivery_mode", "priority")


# Wire order of the basic properties, each with its flag bit.
FIELDS = [
    ("content_type", "s", 15),
    ("content_encoding", "s", 14),
    ("headers", "F", 13),
    ("delivery_mode", "B", 12),
    ("priority", "B", 11),
    ("correlation_id", "s", 10),
    ("reply_to", "s", 9),
    ("expiration", "s", 8),
    ("message_id", "s", 7),
    ("timestamp", "T", 6),
    ("type", "s", 5),
    ("user_id", "s", 4),
    ("app_id", "s", 3),
    ("cluster_id", "s", 2),
]


def _decode_short(buf: bytes, off: int):
    n = buf[off]
    raw = buf[off + 1 : off + 1 + n]
    try:
        return raw.decode(), off + 1 + n
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(raw).decode()}, off + 1 + n


def _encode_short(name: str, value) -> bytes:
    if isinstance(value, dict) and "base64" in value:
        raw = raw_text({"type": "shortstr", **value}, name)
    elif isinstance(value, str):
        raw = raw_text({"type": "shortstr", "value": value}, name)
    else:
        fail(name, "needs a string")
    if len(raw) > 255:
        fail(name, f"is {len(raw)} bytes; AMQP short strings are at most 255")
    return bytes([len(raw)]) + raw


def decode_properties(props, encoded: bytes, offset: int = 0):
    """Set props' attributes from a content header's property list (flags, then values)."""
    flags, shift = 0, 0
    while True:
        (partial,) = _U16(encoded, offset)
        offset += 2
        flags |= partial << shift
        shift += 16
        if not partial & 1:
            break
    for name, kind, bit in FIELDS:
        if not flags & (1 << bit):
            continue
        if kind == "s":
            value, offset = _decode_short(encoded, offset)
        elif kind == "F":
            value, offset = decode_table(encoded, offset)
        elif kind == "B":
            value, offset = encoded[offset], offset + 1
        else:
            value, offset = _U64(encoded, offset)[0], offset + 8
        setattr(props, name, value)
    return props


PROPERTY_NAMES = tuple(name for name, _, _ in FIELDS if name != "headers")


def properties_to_json(props) -> dict:
    """The non-header properties that are set, as plain JSON (headers are kept apart)."""
    values = {}
    for name in PROPERTY_NAMES:  # in wire order, which is the order of the stored JSON
        value = getattr(props, name)
        if value is not None:
            values[name] = value
    return values


def read_properties(props, encoded, offset: int = 0):
    """decode_properties, compiled where it is built."""
    if wire is not None and type(encoded) is bytes:
        return wire.decode_properties(props, encoded, offset, FIELDS)
    return decode_properties(props, encoded, offset)


def check_property_names(properties: dict) -> None:
    unknown = set(properties) - set(PROPERTY_NAMES)
    if unknown:
        fail("properties", f"unknown AMQP properties: {', '.join(sorted(unknown))}")


def encode_properties(props) -> list[bytes]:
    """A content header's property list: the flags, then each value that is set."""
    flags, pieces = 0, []
    for name, kind, bit in FIELDS:
        value = getattr(props, name)
        if value is None:
            continue
        flags |= 1 << bit
        if kind == "s":
            pieces.append(_encode_short(name, value))
        elif kind == "F":
            pieces.append(encode_table(value))
        elif kind == "B":
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 255:
                fail(name, "needs a whole number 0..255")
            pieces.append(bytes([value]))
        else:
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
                fail(name, "needs whole seconds since 1970 (0 to 2**64-1)")
            pieces.append(struct.pack(">Q", value))
    return [struct.pack(">H", flags)] + pieces
