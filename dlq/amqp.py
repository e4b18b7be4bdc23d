"""The only module that imports pika: connections and the lossless codec of AMQP values.

pika 1.4.4 truncates `f`/`d` (float/double) header values on decode and cannot encode
floats at all, and its decoded values lose the wire type (int8 vs int32, bytes vs str).
So message properties are decoded and encoded here, by `TypedProperties`, which pika uses
for every content header (it is registered in `pika.spec.props`). Headers come out in the
console's *typed JSON* form and go back to the wire with the same type codes:

    {"type": "longstr", "value": "text"}       {"type": "longstr", "base64": "..."} (not UTF-8)
    {"type": "bytes", "base64": "..."}          {"type": "bool", "value": true}
    {"type": "int8"|"uint8"|"int16"|"uint16"|"int32"|"uint32"|"int64", "value": 12}
    {"type": "float"|"double", "value": 1.75}   (non-finite: "NaN", "Infinity", "-Infinity";
                                                 RabbitMQ refuses those, so they never encode)
    {"type": "decimal", "value": "12.50"}       {"type": "timestamp", "value": 1700000000}
    {"type": "array", "value": [typed, ...]}    {"type": "table", "value": {"key": typed}}
    {"type": "void", "value": null}

Table keys that are not UTF-8 are kept with surrogate escapes, which JSON carries.
The other properties have fixed AMQP types and stay plain JSON (strings, ints); a short
string that is not UTF-8 becomes {"base64": "..."}.
"""

import base64
import math
import struct
import time
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation

import pika
from pika import exceptions as _exc
from pika import spec

ConnectionErrors = (_exc.AMQPConnectionError, ConnectionError, OSError)
ChannelErrors = (_exc.AMQPChannelError,)
AllErrors = (_exc.AMQPError, ConnectionError, OSError)


class AmqpValueError(ValueError):
    """A typed value that cannot go on the wire: wrong shape, out of range, too long."""


# --- decoding ---------------------------------------------------------------------------

_U8 = struct.Struct(">B").unpack_from
_U16 = struct.Struct(">H").unpack_from
_U32 = struct.Struct(">I").unpack_from
_U64 = struct.Struct(">Q").unpack_from

# code -> (type name, struct format, size); RabbitMQ's table codes (AMQP 0-9-1 errata),
# plus the spec's `U` and `L`, which it does not emit but a peer might.
_NUMBERS = {
    ord("b"): ("int8", struct.Struct(">b"), 1),
    ord("B"): ("uint8", struct.Struct(">B"), 1),
    ord("s"): ("int16", struct.Struct(">h"), 2),
    ord("U"): ("int16", struct.Struct(">h"), 2),
    ord("u"): ("uint16", struct.Struct(">H"), 2),
    ord("I"): ("int32", struct.Struct(">i"), 4),
    ord("i"): ("uint32", struct.Struct(">I"), 4),
    ord("l"): ("int64", struct.Struct(">q"), 8),
    ord("L"): ("int64", struct.Struct(">q"), 8),
    ord("f"): ("float", struct.Struct(">f"), 4),
    ord("d"): ("double", struct.Struct(">d"), 8),
}
_SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _json_float(x: float):
    if math.isfinite(x):
        return x
    return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")


def _text(type_name: str, raw: bytes) -> dict:
    try:
        return {"type": type_name, "value": raw.decode()}
    except UnicodeDecodeError:
        return {"type": type_name, "base64": base64.b64encode(raw).decode()}


# Deeper tables and arrays are kept as their undecoded wire bytes ({"type": "array",
# "base64": ...}): RabbitMQ accepts thousands of levels, and decoding them recursively
# would end pika's connection with a RecursionError on every redelivery of that message.
MAX_NESTING = 64


def decode_value(buf: bytes, off: int, depth: int = 0) -> tuple[dict, int]:
    kind = buf[off]
    off += 1
    if kind == 0x53:  # S long string: most values, so first and inline
        (n,) = _U32(buf, off)
        end = off + 4 + n
        try:
            return {"type": "longstr", "value": buf[off + 4 : end].decode()}, end
        except UnicodeDecodeError:
            return _text("longstr", buf[off + 4 : end]), end
    if kind in (0x46, 0x41) and depth >= MAX_NESTING:  # F table, A array: too deep
        (n,) = _U32(buf, off)
        raw = base64.b64encode(buf[off + 4 : off + 4 + n]).decode()
        return {"type": "table" if kind == 0x46 else "array", "base64": raw}, off + 4 + n
    number = _NUMBERS.get(kind)
    if number:
        name, fmt, size = number
        value = fmt.unpack_from(buf, off)[0]
        if size >= 4 and name in ("float", "double"):
            value = _json_float(value)
        return {"type": name, "value": value}, off + size
    if kind == 0x78:  # x byte array
        (n,) = _U32(buf, off)
        raw = buf[off + 4 : off + 4 + n]
        return {"type": "bytes", "base64": base64.b64encode(raw).decode()}, off + 4 + n
    if kind == 0x46:  # F table
        table, off = decode_table(buf, off, depth + 1)
        return {"type": "table", "value": table}, off
    if kind == 0x41:  # A array
        (n,) = _U32(buf, off)
        off += 4
        end = off + n
        items = []
        while off < end:
            item, off = decode_value(buf, off, depth + 1)
            items.append(item)
        return {"type": "array", "value": items}, off
    if kind == 0x74:  # t bool
        return {"type": "bool", "value": bool(buf[off])}, off + 1
    if kind == 0x54:  # T timestamp
        return {"type": "timestamp", "value": _U64(buf, off)[0]}, off + 8
    if kind == 0x44:  # D decimal: scale octet + signed int32
        scale = buf[off]
        (raw,) = struct.unpack_from(">i", buf, off + 1)
        return {"type": "decimal", "value": str(Decimal(raw).scaleb(-scale))}, off + 5
    if kind == 0x56:  # V void
        return {"type": "void", "value": None}, off
    raise _exc.InvalidFieldTypeException(bytes([kind]))


def decode_table(buf: bytes, off: int, depth: int = 0) -> tuple[dict, int]:
    (size,) = _U32(buf, off)
    off += 4
    end = off + size
    table = {}
    while off < end:
        klen = buf[off]
        key = buf[off + 1 : off + 1 + klen].decode("utf-8", "surrogateescape")
        table[key], off = decode_value(buf, off + 1 + klen, depth)
    return table, off


# The same decoder, compiled (dlq/_wire.pyx): TypedProperties.decode uses it where it is
# built, and the Python above elsewhere (and as the reference, tests/test_compiled.py).
try:
    from dlq import _wire
except ImportError:
    _wire = None
else:
    _wire.use(decode_value, MAX_NESTING)


def decoder() -> str:
    """Which decoder reads the content headers: "compiled" or "Python"."""
    return "compiled" if _wire is not None else "Python"


# --- encoding ---------------------------------------------------------------------------

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "uint8": (0, 2**8 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
_CODES = {
    "int8": (b"b", ">b"),
    "uint8": (b"B", ">B"),
    "int16": (b"s", ">h"),
    "uint16": (b"u", ">H"),
    "int32": (b"I", ">i"),
    "uint32": (b"i", ">I"),
    "int64": (b"l", ">q"),
    "float": (b"f", ">f"),
    "double": (b"d", ">d"),
}
TYPE_NAMES = [
    "longstr",
    "bytes",
    "bool",
    "int8",
    "uint8",
    "int16",
    "uint16",
    "int32",
    "uint32",
    "int64",
    "float",
    "double",
    "decimal",
    "timestamp",
    "array",
    "table",
    "void",
]


def _fail(path: str, problem: str):
    raise AmqpValueError(f"{path}: {problem}")


def _raw_text(typed: dict, path: str) -> bytes:
    if "base64" in typed:
        try:
            return base64.b64decode(typed["base64"], validate=True)
        except (ValueError, TypeError):
            _fail(path, "base64 is not valid base64")
    value = typed.get("value")
    if not isinstance(value, str):
        _fail(path, f"{typed.get('type')} needs a string value or base64")
    try:
        return value.encode()
    except UnicodeEncodeError:
        _fail(path, "string is not valid Unicode")


def _number(typed: dict, path: str, name: str) -> bytes:
    value = typed.get("value")
    code, fmt = _CODES[name]
    if name in ("float", "double"):
        if isinstance(value, str) and value in _SPECIAL_FLOATS:
            value = _SPECIAL_FLOATS[value]
        if isinstance(value, bool) or not isinstance(value, int | float):
            _fail(path, f"{name} needs a number")
        if not math.isfinite(value):  # RabbitMQ closes the whole connection (541) on one
            _fail(path, f"RabbitMQ refuses {typed['value']} in a {name} header")
        try:
            return code + struct.pack(fmt, value)
        except (OverflowError, struct.error):
            _fail(path, f"{value} does not fit a {name}")
    low, high = _INT_RANGES[name]
    if isinstance(value, bool) or not isinstance(value, int):
        _fail(path, f"{name} needs a whole number")
    if not low <= value <= high:
        _fail(path, f"{value} is outside the {name} range {low}..{high}")
    return code + struct.pack(fmt, value)


def _decimal(typed: dict, path: str) -> bytes:
    try:
        value = Decimal(str(typed.get("value")))
    except InvalidOperation:
        _fail(path, "decimal needs a decimal string such as '12.50'")
    if not value.is_finite():
        _fail(path, "decimal must be finite")
    exponent = value.as_tuple().exponent
    scale = max(0, -exponent)
    raw = int(value.scaleb(scale))
    if scale > 255 or not -(2**31) <= raw < 2**31:
        _fail(path, f"{value} does not fit an AMQP decimal (scale <= 255, 32-bit digits)")
    return b"D" + struct.pack(">Bi", scale, raw)


def encode_value(typed, path: str = "value", depth: int = 0) -> bytes:
    if not isinstance(typed, dict) or "type" not in typed:
        _fail(path, 'expected a typed value like {"type": "longstr", "value": "..."}')
    name = typed["type"]
    if not isinstance(name, str):
        _fail(path, f"type must be one of: {', '.join(TYPE_NAMES)}")
    if name == "longstr":
        raw = _raw_text(typed, path)
        return b"S" + struct.pack(">I", len(raw)) + raw
    if name == "bytes":
        if "base64" not in typed:
            _fail(path, "bytes needs base64")
        raw = _raw_text(typed, path)
        return b"x" + struct.pack(">I", len(raw)) + raw
    if name in _CODES:
        return _number(typed, path, name)
    if name == "bool":
        if not isinstance(typed.get("value"), bool):
            _fail(path, "bool needs true or false")
        return b"t" + (b"\x01" if typed["value"] else b"\x00")
    if name == "decimal":
        return _decimal(typed, path)
    if name == "timestamp":
        value = typed.get("value")
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
            _fail(path, "timestamp needs whole seconds since 1970 (>= 0)")
        return b"T" + struct.pack(">Q", value)
    if name == "void":
        return b"V"
    if name in ("array", "table") and "base64" in typed:  # nested too deep to decode
        raw = _raw_text(typed, path)
        return (b"A" if name == "array" else b"F") + struct.pack(">I", len(raw)) + raw
    if name in ("array", "table") and depth >= MAX_NESTING:
        _fail(path, f"tables and arrays nest at most {MAX_NESTING} levels deep")
    if name == "array":
        items = typed.get("value")
        if not isinstance(items, list):
            _fail(path, "array needs a list")
        data = b"".join(encode_value(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(items))
        return b"A" + struct.pack(">I", len(data)) + data
    if name == "table":
        return b"F" + encode_table(typed.get("value"), path, depth + 1)
    _fail(path, f"unknown type {name!r} (one of: {', '.join(TYPE_NAMES)})")


def encode_table(table, path: str = "headers", depth: int = 0) -> bytes:
    if not isinstance(table, dict):
        _fail(path, "a table needs an object")
    parts = []
    for key, typed in table.items():
        raw_key = key.encode("utf-8", "surrogateescape")
        if len(raw_key) > 255:
            _fail(f"{path}.{key[:40]}", "a header name is at most 255 bytes")
        parts.append(bytes([len(raw_key)]) + raw_key)
        parts.append(encode_value(typed, f"{path}.{key}", depth))
    data = b"".join(parts)
    return struct.pack(">I", len(data)) + data


# --- typed <-> Python -------------------------------------------------------------------


def plain(typed):
    """A typed value as a Python value, for reading (deaths, display); never for replay."""
    if not isinstance(typed, dict):
        return None
    if "base64" in typed:
        return base64.b64decode(typed["base64"])
    name, value = typed.get("type"), typed.get("value")
    # Most values are strings and numbers, which are themselves: one lookup decides.
    convert = _PLAIN.get(name) if isinstance(name, str) else None
    return value if convert is None else convert(value)


def _plain_table(value):
    return {k: plain(v) for k, v in value.items()} if isinstance(value, dict) else None


def _plain_array(value):
    return [plain(v) for v in value] if isinstance(value, list) else None


def _plain_timestamp(value):
    if not isinstance(value, int):
        return value
    try:
        return datetime.fromtimestamp(value, UTC)
    except (OverflowError, OSError, ValueError):
        return value


def _plain_float(value):
    return _SPECIAL_FLOATS.get(value) if isinstance(value, str) else value


_PLAIN = {
    "table": _plain_table,
    "array": _plain_array,
    "timestamp": _plain_timestamp,
    "decimal": Decimal,
    "float": _plain_float,
    "double": _plain_float,
}


def typed(value) -> dict:
    """A Python value in typed form, choosing the type a producer most likely meant."""
    if isinstance(value, bool):
        return {"type": "bool", "value": value}
    if isinstance(value, int):
        low, high = _INT_RANGES["int32"]
        return {"type": "int32" if low <= value <= high else "int64", "value": value}
    if isinstance(value, float):
        return {"type": "double", "value": _json_float(value)}
    if isinstance(value, str):
        return {"type": "longstr", "value": value}
    if isinstance(value, bytes | bytearray):
        return {"type": "bytes", "base64": base64.b64encode(value).decode()}
    if isinstance(value, Decimal):
        return {"type": "decimal", "value": str(value)}
    if isinstance(value, datetime):
        return {"type": "timestamp", "value": int(value.timestamp())}
    if isinstance(value, dict):
        return {"type": "table", "value": {k: typed(v) for k, v in value.items()}}
    if isinstance(value, list | tuple):
        return {"type": "array", "value": [typed(v) for v in value]}
    if value is None:
        return {"type": "void", "value": None}
    raise AmqpValueError(f"no AMQP type for {type(value).__name__}")


def typed_table(values: dict) -> dict:
    return {k: typed(v) for k, v in values.items()}


# --- properties -------------------------------------------------------------------------

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
_FIELDS = [
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
        raw = _raw_text({"type": "shortstr", **value}, name)
    elif isinstance(value, str):
        raw = _raw_text({"type": "shortstr", "value": value}, name)
    else:
        _fail(name, "needs a string")
    if len(raw) > 255:
        _fail(name, f"is {len(raw)} bytes; AMQP short strings are at most 255")
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
    for name, kind, bit in _FIELDS:
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


class TypedProperties(spec.BasicProperties):
    """BasicProperties whose headers are a typed table (see the module docstring)."""

    def decode(self, encoded, offset=0):
        if _wire is not None and type(encoded) is bytes:  # the same, compiled
            return _wire.decode_properties(self, encoded, offset, _FIELDS)
        return decode_properties(self, encoded, offset)

    def encode(self):
        flags, pieces = 0, []
        for name, kind, bit in _FIELDS:
            value = getattr(self, name)
            if value is None:
                continue
            flags |= 1 << bit
            if kind == "s":
                pieces.append(_encode_short(name, value))
            elif kind == "F":
                pieces.append(encode_table(value))
            elif kind == "B":
                if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 255:
                    _fail(name, "needs a whole number 0..255")
                pieces.append(bytes([value]))
            else:
                if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
                    _fail(name, "needs whole seconds since 1970 (0 to 2**64-1)")
                pieces.append(struct.pack(">Q", value))
        return [struct.pack(">H", flags)] + pieces


# Every content header pika decodes now comes through TypedProperties.
spec.props[spec.BasicProperties.INDEX] = TypedProperties


_PROPERTY_NAMES = tuple(name for name, _, _ in _FIELDS if name != "headers")


def properties_to_json(props: TypedProperties) -> dict:
    """The non-header properties that are set, as plain JSON (headers are kept apart)."""
    values = {}
    for name in _PROPERTY_NAMES:  # in wire order, which is the order of the stored JSON
        value = getattr(props, name)
        if value is not None:
            values[name] = value
    return values


def make_properties(properties: dict, headers: dict | None) -> TypedProperties:
    unknown = set(properties) - {name for name, _, _ in _FIELDS if name != "headers"}
    if unknown:
        _fail("properties", f"unknown AMQP properties: {', '.join(sorted(unknown))}")
    return TypedProperties(headers=headers, **properties)


def header_frame_size(props: TypedProperties) -> int:
    """Bytes of the content-header frame payload, to check against frame_max before sending."""
    return 12 + sum(len(p) for p in props.encode())


# --- connections ------------------------------------------------------------------------


def parameters(url: str, name: str, heartbeat: int = 30) -> pika.URLParameters:
    params = pika.URLParameters(url)
    params.client_properties = {"connection_name": name, "product": "DLQ Console"}
    params.heartbeat = heartbeat
    params.blocked_connection_timeout = 60
    params.connection_attempts = 1
    params.socket_timeout = 10
    return params


def connect(url: str, name: str, heartbeat: int = 30) -> pika.BlockingConnection:
    return pika.BlockingConnection(parameters(url, name, heartbeat))


def ping(url: str, timeout: float = 3.0) -> None:
    """Open and close a connection (for /readyz); raises one of AllErrors if it cannot."""
    params = parameters(url, "dlq-readyz", heartbeat=0)
    params.socket_timeout = params.stack_timeout = timeout
    pika.BlockingConnection(params).close()


def vhost_of(url: str) -> str:
    return pika.URLParameters(url).virtual_host


def describe(url: str) -> str:
    """host:port/vhost of a broker URL, without its credentials (for logs)."""
    params = pika.URLParameters(url)
    return f"{params.host}:{params.port}/{params.virtual_host}"


# --- publishing with confirms -----------------------------------------------------------

REPLAY_ID_HEADER = "dlq-replay-id"


class Outgoing:
    """One message to publish; `key` must also be its dlq-replay-id header (returns carry no
    sequence number, so a basic.return is matched to its publish by that header)."""

    __slots__ = ("key", "exchange", "routing_key", "body", "properties")

    def __init__(self, key: str, exchange: str, routing_key: str, body: bytes, properties):
        self.key, self.exchange, self.routing_key = key, exchange, routing_key
        self.body, self.properties = body, properties


class ConfirmPublisher:
    """Publishes with `mandatory` and publisher confirms, many messages in flight at once.

    pika's blocking confirm waits for each confirm (about 600 msg/s here); this keeps a
    window of outstanding publishes on a SelectConnection and settles each one by the
    broker's ack/nack (multiple-aware) and any basic.return that precedes the ack.
    Outcomes: confirmed, unroutable (returned), nacked, error (channel or connection closed
    before the confirm: the broker may or may not have routed it).
    """

    def __init__(self, url: str, name: str = "dlq-replay", window: int = 1000):
        self.window = window
        self.results: dict[str, tuple[str, str]] = {}
        self._error: str | None = None
        self._channel = None
        self._ready = False
        params = parameters(url, name)
        self._conn = pika.SelectConnection(
            params,
            on_open_callback=self._on_open,
            on_open_error_callback=self._on_open_error,
            on_close_callback=self._on_conn_closed,
        )
        self._run(lambda: self._ready or self._error is not None, timeout=15)
        if self._error:
            raise ConnectionError(self._error)

    @property
    def frame_max(self) -> int:
        return self._conn.params.frame_max

    @property
    def broken(self) -> bool:
        """The connection is gone: outstanding publishes have an unknown fate."""
        return self._error is not None or not self._conn.is_open

    @property
    def server_version(self) -> str:
        version = self._conn.server_properties.get("version", b"")
        return version.decode() if isinstance(version, bytes) else str(version)

    # connection plumbing
    def _on_open(self, conn):
        conn.channel(on_open_callback=self._on_channel)

    def _on_open_error(self, _conn, error):
        self._error = f"cannot connect to the broker: {error!r}"
        self._conn.ioloop.stop()

    def _on_conn_closed(self, _conn, reason):
        self._error = self._error or f"connection closed: {reason!r}"
        self._fail_outstanding(self._error)
        self._conn.ioloop.stop()

    def _on_channel(self, channel):
        self._channel = channel
        channel.add_on_close_callback(self._on_channel_closed)
        channel.add_on_return_callback(self._on_return)
        channel.confirm_delivery(self._on_confirm, callback=lambda _frame: self._set_ready())
        self._tags: dict[int, str] = {}
        self._returned: dict[str, str] = {}
        self._seq = 0

    def _set_ready(self):
        self._ready = True

    def _on_channel_closed(self, _channel, reason):
        # A missing exchange or an oversized frame closes the channel: everything still
        # in flight has an unknown fate; reopen for whatever comes next.
        self._fail_outstanding(f"channel closed: {reason!r}")
        self._ready = False
        if self._conn.is_open:
            self._conn.channel(on_open_callback=self._on_channel)

    def _fail_outstanding(self, detail: str):
        for key in getattr(self, "_tags", {}).values():
            self.results.setdefault(key, ("error", detail))
        if hasattr(self, "_tags"):
            self._tags.clear()

    def _on_return(self, _channel, method, properties, _body):
        headers = properties.headers or {}
        key = plain(headers.get(REPLAY_ID_HEADER))
        if isinstance(key, str):
            self._returned[key] = f"{method.reply_code} {method.reply_text}"

    def _on_confirm(self, frame):
        method = frame.method
        nack = isinstance(method, spec.Basic.Nack)
        tags = (
            [t for t in self._tags if t <= method.delivery_tag]
            if method.multiple
            else [method.delivery_tag]
        )
        for tag in tags:
            key = self._tags.pop(tag, None)
            if key is None:
                continue
            if nack:
                self.results[key] = ("nacked", "the broker refused the message (basic.nack)")
            elif key in self._returned:
                self.results[key] = ("unroutable", f"no queue bound: {self._returned.pop(key)}")
            else:
                self.results[key] = ("confirmed", "")

    def _run(self, done, timeout: float):
        deadline = time.monotonic() + timeout

        def check():
            if done() or time.monotonic() >= deadline:
                self._conn.ioloop.stop()
            else:
                self._conn.ioloop.call_later(0.005, check)

        self._conn.ioloop.call_later(0, check)
        self._conn.ioloop.start()

    def publish(self, items: list[Outgoing], timeout: float = 60.0, rate_per_s=None) -> dict:
        """Publish and wait for every outcome; returns {key: (outcome, detail)}."""
        pending = list(reversed(items))
        wanted = {item.key for item in items}
        interval = 1.0 / rate_per_s if rate_per_s else 0.0
        started, sent = time.monotonic(), [0]

        def pump():
            if not self._ready or self._channel is None or not self._channel.is_open:
                return
            # The k-th publish is due k intervals after the start: pump runs every few ms,
            # so each run catches up with what fell due since the last one.
            while pending and len(self._tags) < self.window:
                if interval and sent[0] * interval > time.monotonic() - started:
                    return
                item = pending.pop()
                self._seq += 1
                self._tags[self._seq] = item.key
                self._channel.basic_publish(
                    item.exchange, item.routing_key, item.body, item.properties, mandatory=True
                )
                sent[0] += 1

        def done():
            if self._error:
                return True
            pump()
            return not pending and all(key in self.results for key in wanted)

        self._run(done, timeout)
        for item in items:
            self.results.setdefault(item.key, ("error", self._error or "no confirm in time"))
        return {key: self.results.pop(key) for key in wanted}

    def close(self):
        if self._conn.is_open:
            self._conn.close()
            self._run(lambda: self._conn.is_closed, timeout=5)
