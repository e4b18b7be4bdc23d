"""The lossless codec of AMQP field values (no pika here); message properties, whose headers
are a table of them, are dlq/broker/properties.py.

pika 1.4.4 truncates `f`/`d` (float/double) header values on decode and cannot encode
floats at all, and its decoded values lose the wire type (int8 vs int32, bytes vs str).
So header tables are decoded and encoded here, in the console's *typed JSON* form, and go
back to the wire with the same type codes:

    {"type": "longstr", "value": "text"}       {"type": "longstr", "base64": "..."} (not UTF-8)
    {"type": "bytes", "base64": "..."}          {"type": "bool", "value": true}
    {"type": "int8"|"uint8"|"int16"|"uint16"|"int32"|"uint32"|"int64", "value": 12}
    {"type": "float"|"double", "value": 1.75}   (non-finite: "NaN", "Infinity", "-Infinity";
                                                 RabbitMQ refuses those, so they never encode)
    {"type": "decimal", "value": "12.50"}       {"type": "timestamp", "value": 1700000000}
    {"type": "array", "value": [typed, ...]}    {"type": "table", "value": {"key": typed}}
    {"type": "void", "value": null}

Table keys that are not UTF-8 are kept with surrogate escapes, which JSON carries.
"""

import base64
import math
import struct
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation


class AmqpValueError(ValueError):
    """A typed value that cannot go on the wire: wrong shape, out of range, too long."""


class UnknownFieldType(ValueError):
    """Bytes on the wire with a field type code that AMQP 0-9-1 (and RabbitMQ) do not define."""


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
    raise UnknownFieldType(bytes([kind]))


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


# The same decoder, compiled (dlq/broker/_wire.pyx): TypedProperties.decode uses it where it is
# built, and the Python above elsewhere (and as the reference, tests/test_compiled.py).
try:
    from dlq.broker import _wire as wire
except ImportError:
    wire = None
else:
    wire.use(decode_value, MAX_NESTING)


def decoder() -> str:
    """Which decoder reads the content headers: "compiled" or "Python"."""
    return "compiled" if wire is not None else "Python"


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


def fail(path: str, problem: str):
    raise AmqpValueError(f"{path}: {problem}")


def raw_text(typed: dict, path: str) -> bytes:
    if "base64" in typed:
        try:
            return base64.b64decode(typed["base64"], validate=True)
        except (ValueError, TypeError):
            fail(path, "base64 is not valid base64")
    value = typed.get("value")
    if not isinstance(value, str):
        fail(path, f"{typed.get('type')} needs a string value or base64")
    try:
        return value.encode()
    except UnicodeEncodeError:
        fail(path, "string is not valid Unicode")


def _number(typed: dict, path: str, name: str) -> bytes:
    value = typed.get("value")
    code, fmt = _CODES[name]
    if name in ("float", "double"):
        if isinstance(value, str) and value in _SPECIAL_FLOATS:
            value = _SPECIAL_FLOATS[value]
        if isinstance(value, bool) or not isinstance(value, int | float):
            fail(path, f"{name} needs a number")
        try:
            value = float(value)
        except OverflowError:  # an int past a double's range: isfinite() raised it (a 500)
            fail(path, f"{_short(typed['value'])} does not fit a {name}")
        if not math.isfinite(value):  # RabbitMQ closes the whole connection (541) on one
            fail(path, f"RabbitMQ refuses {typed['value']} in a {name} header")
        try:
            return code + struct.pack(fmt, value)
        except (OverflowError, struct.error):
            fail(path, f"{value} does not fit a {name}")
    low, high = _INT_RANGES[name]
    if isinstance(value, bool) or not isinstance(value, int):
        fail(path, f"{name} needs a whole number")
    if not low <= value <= high:
        fail(path, f"{_short(value)} is outside the {name} range {low}..{high}")
    return code + struct.pack(fmt, value)


# An AMQP decimal is a scale octet and a signed 32-bit integer, which has at most 10 digits.
_DECIMAL_DIGITS = 10


def _decimal(typed: dict, path: str) -> bytes:
    value = typed.get("value")
    try:
        value = Decimal(value if isinstance(value, str) else str(value))
    except (InvalidOperation, ValueError):  # ValueError: str() of an int past 4300 digits
        fail(path, "decimal needs a decimal string such as '12.50'")
    if not value.is_finite():
        fail(path, "decimal must be finite")
    # Digits and exponent are checked before any arithmetic: "1e999999" is a million digits
    # as an integer, and building one held a web worker's CPU for most of a minute.
    sign, digits, exponent = value.as_tuple()
    scale = max(0, -exponent)
    width = len(digits) + max(0, exponent) if any(digits) else 1
    if scale > 255 or width > _DECIMAL_DIGITS:
        fail(path, f"{_short(value)} does not fit an AMQP decimal (scale <= 255, 32-bit digits)")
    raw = int("".join(map(str, digits))) * 10 ** max(0, exponent) if any(digits) else 0
    raw = -raw if sign else raw
    if not -(2**31) <= raw < 2**31:
        fail(path, f"{value} does not fit an AMQP decimal (scale <= 255, 32-bit digits)")
    return b"D" + struct.pack(">Bi", scale, raw)


def _short(value) -> str:
    """A value as an error names it: a 100,000-digit number is not echoed whole."""
    try:
        text = str(value)
    except ValueError:  # an int past Python's 4300-digit limit for int -> str
        return "a number of more than 4300 digits"
    return text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"


def encode_value(typed, path: str = "value", depth: int = 0) -> bytes:
    if not isinstance(typed, dict) or "type" not in typed:
        fail(path, 'expected a typed value like {"type": "longstr", "value": "..."}')
    name = typed["type"]
    if not isinstance(name, str):
        fail(path, f"type must be one of: {', '.join(TYPE_NAMES)}")
    if name == "longstr":
        raw = raw_text(typed, path)
        return b"S" + struct.pack(">I", len(raw)) + raw
    if name == "bytes":
        if "base64" not in typed:
            fail(path, "bytes needs base64")
        raw = raw_text(typed, path)
        return b"x" + struct.pack(">I", len(raw)) + raw
    if name in _CODES:
        return _number(typed, path, name)
    if name == "bool":
        if not isinstance(typed.get("value"), bool):
            fail(path, "bool needs true or false")
        return b"t" + (b"\x01" if typed["value"] else b"\x00")
    if name == "decimal":
        return _decimal(typed, path)
    if name == "timestamp":
        value = typed.get("value")
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
            fail(path, "timestamp needs whole seconds since 1970 (>= 0)")
        return b"T" + struct.pack(">Q", value)
    if name == "void":
        return b"V"
    if name in ("array", "table") and "base64" in typed:  # nested too deep to decode
        raw = raw_text(typed, path)
        return (b"A" if name == "array" else b"F") + struct.pack(">I", len(raw)) + raw
    if name in ("array", "table") and depth >= MAX_NESTING:
        fail(path, f"tables and arrays nest at most {MAX_NESTING} levels deep")
    if name == "array":
        items = typed.get("value")
        if not isinstance(items, list):
            fail(path, "array needs a list")
        data = b"".join(encode_value(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(items))
        return b"A" + struct.pack(">I", len(data)) + data
    if name == "table":
        return b"F" + encode_table(typed.get("value"), path, depth + 1)
    fail(path, f"unknown type {name!r} (one of: {', '.join(TYPE_NAMES)})")


def encode_table(table, path: str = "headers", depth: int = 0) -> bytes:
    if not isinstance(table, dict):
        fail(path, "a table needs an object")
    parts = []
    for key, typed in table.items():
        raw_key = key.encode("utf-8", "surrogateescape")
        if len(raw_key) > 255:
            fail(f"{path}.{key[:40]}", "a header name is at most 255 bytes")
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
