"""The edit form's headers as rows of name, type and value, read back to typed headers.

A row is offered only for a header whose name and value an <input> sends back unchanged and
whose type a row can say: a table, an array, a long string that is not UTF-8, a name or value
with a control or bidi character stays as it is, edited only as typed JSON. A row whose type
and value text are as they were offered keeps its stored typed value exactly (a double 2.0 is
not re-read as 2, a timestamp shown as a date is not re-read at all)."""

import base64
import binascii
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from dlq.actions.errors import ActionError
from dlq.broker.codec import AmqpValueError, encode_table
from dlq.messages import display

# The types a row can carry, as the typed JSON names them, with the words the select shows.
ROW_TYPES = [
    ("longstr", "string"),
    ("int8", "int8"),
    ("uint8", "uint8"),
    ("int16", "int16"),
    ("uint16", "uint16"),
    ("int32", "int32 (int)"),
    ("uint32", "uint32"),
    ("int64", "int64 (long)"),
    ("bool", "bool"),
    ("float", "float"),
    ("double", "double"),
    ("decimal", "decimal"),
    ("timestamp", "timestamp (UTC)"),
    ("bytes", "bytes (base64)"),
    ("void", "void (no value)"),
]
_TYPES = dict(ROW_TYPES)
_INTS = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64"}
ROW_TEXT_LIMIT = 2000  # a longer value is edited as JSON: an input line is no place for it
MAX_ROWS = 1000  # row indexes read from a POST: past them a row is not looked for
_ROW_KEY = re.compile(r"(\d{1,4})-(?:was|name|type|value|remove)")
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


@dataclass
class Row:
    """One row as the form shows it (`was`: the stored name it edits; "" for a new row)."""

    was: str
    name: str
    type: str
    text: str
    remove: bool = False


def _fits_input(text: str) -> bool:
    """Whether an <input> shows `text` as it is and sends it back unchanged."""
    return len(text) <= ROW_TEXT_LIMIT and display.visible(text) == text


def row_text(typed) -> str | None:
    """A stored typed value as a row's value text, or None when a row cannot carry it."""
    if not isinstance(typed, dict) or typed.get("type") not in _TYPES:
        return None
    kind, value = typed["type"], typed.get("value")
    if kind == "bytes":
        text = typed.get("base64")
    elif "base64" in typed:  # a long string that is not UTF-8
        return None
    elif kind in ("longstr", "decimal"):
        text = value
    elif kind == "bool":
        text = ("true" if value else "false") if isinstance(value, bool) else None
    elif kind in _INTS:
        text = str(value) if type(value) is int else None
    elif kind in ("float", "double"):
        text = value if value in ("NaN", "Infinity", "-Infinity") else _number_text(value)
    elif kind == "timestamp":
        text = _timestamp_text(value)
    else:  # void
        text = "" if value is None else None
    return text if isinstance(text, str) and _fits_input(text) else None


def _number_text(value) -> str | None:
    if type(value) is int:
        return str(value)
    return repr(value) if type(value) is float else None


def _timestamp_text(value) -> str | None:
    if type(value) is not int:
        return None
    try:
        return datetime.fromtimestamp(value, UTC).strftime(TIMESTAMP_FORMAT)
    except (OverflowError, OSError, ValueError):  # no calendar holds it: its seconds
        return str(value)


def rows_of(headers: dict) -> tuple[list[Row], list[str]]:
    """The rows the form offers for stored `headers`, and the names it leaves to the JSON."""
    rows, fixed = [], []
    for name, typed in headers.items():
        text = row_text(typed)
        if text is None or not _fits_input(name):
            fixed.append(name)
        else:
            rows.append(Row(name, name, typed["type"], text))
    return rows, fixed


def posted_rows(data, prefix: str) -> list[Row]:
    """The rows a POST carries under `prefix` ("edit-h"), in their index order."""
    indexes = set()
    for key in data:
        if key.startswith(prefix + "-"):
            found = _ROW_KEY.fullmatch(key[len(prefix) + 1 :])
            if found and int(found.group(1)) < MAX_ROWS:
                indexes.add(int(found.group(1)))
    return [
        Row(
            data.get(f"{prefix}-{i}-was", ""),
            data.get(f"{prefix}-{i}-name", ""),
            data.get(f"{prefix}-{i}-type", "longstr"),
            data.get(f"{prefix}-{i}-value", ""),
            bool(data.get(f"{prefix}-{i}-remove")),
        )
        for i in sorted(indexes)
    ]


def read_rows(rows: list[Row], stored: dict) -> dict:
    """The headers the rows stand for: each in its stored place (renamed or not), new rows
    last, headers no row offers kept as they are. ActionError names every bad row."""
    offered = {row.was: row for row in rows_of(stored)[0]}
    placed, added, names, errors = {}, [], set(), {}
    for row in rows:
        if not row.was and not row.name and not row.text:
            continue  # the blank row left blank
        key = f"headers.{row.name or '(no name)'}"
        if row.was and row.was not in offered:
            errors[key] = ["this header changed since the page was loaded: load it again"]
            continue
        offered_row = offered.pop(row.was, None)
        if row.remove:
            placed[row.was] = None
            continue
        if not row.name:
            errors[key] = ["a header needs a name"]
            continue
        if row.name in names:
            errors[key] = ["is given twice"]
            continue
        names.add(row.name)
        try:
            typed = _value(row, offered_row, stored.get(row.was))
        except ValueError as e:
            errors[key] = [str(e)]
            continue
        if offered_row is None:
            added.append((row.name, typed))
        else:
            placed[row.was] = (row.name, typed)
    handled = {row.was for row in rows if row.was}
    for name in stored:  # a header no row offers (or whose row was not sent) keeps its name
        if name not in handled and name in names:
            errors[f"headers.{name}"] = ["is given twice"]
    if errors:
        raise ActionError(errors)
    headers = {}
    for name, typed in stored.items():
        if name not in placed:
            headers[name] = typed
        elif placed[name] is not None:
            headers[placed[name][0]] = placed[name][1]
    headers.update(added)
    return headers


def _value(row: Row, offered: Row | None, stored) -> dict:
    """The row's typed value: the stored one when type and text are as offered."""
    if row.type not in _TYPES:
        raise ValueError(f"type must be one of: {', '.join(_TYPES)}")
    if offered is not None and (row.type, row.text) == (offered.type, offered.text):
        return stored
    typed = _parsed(row.type, row.text)
    try:
        encode_table({row.name: typed})
    except AmqpValueError as e:
        raise ValueError(str(e).split(": ", 1)[-1]) from None
    return typed


def _parsed(kind: str, text: str) -> dict:
    if kind == "longstr":
        return {"type": kind, "value": text}
    if kind == "bytes":
        compact = "".join(text.split())
        try:
            base64.b64decode(compact, validate=True)
        except binascii.Error:
            raise ValueError("bytes are given as base64, and this is not base64") from None
        return {"type": kind, "base64": compact}
    if kind == "void":
        if text.strip():
            raise ValueError("void has no value: leave it empty")
        return {"type": kind, "value": None}
    text = text.strip()
    if kind == "bool":
        if text.lower() not in ("true", "false"):
            raise ValueError("must be true or false")
        return {"type": kind, "value": text.lower() == "true"}
    if kind in _INTS:
        if not re.fullmatch(r"[-+]?\d{1,40}", text):
            raise ValueError("must be a whole number")
        return {"type": kind, "value": int(text)}
    if kind in ("float", "double"):
        return {"type": kind, "value": _float(text)}
    if kind == "timestamp":
        return {"type": kind, "value": _seconds(text)}
    return {"type": kind, "value": text}  # decimal: the encoder reads the string


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError("must be a number such as 1.75") from None
    if not math.isfinite(value):
        raise ValueError("RabbitMQ refuses a number that is not finite")
    return value


def _seconds(text: str) -> int:
    if re.fullmatch(r"\d{1,20}", text):
        return int(text)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            "must be a UTC time such as 2026-01-31T09:30:00Z, or seconds since 1970"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)  # the rows say UTC
    return int(moment.timestamp())
