"""Typed AMQP values in the API: header values as typed JSON, message properties, and the
checks that what an operator sends can go on the wire."""

import base64
from typing import Annotated, Any

from ninja import Field
from pydantic import (
    BaseModel,
    ConfigDict,
    RootModel,
    Strict,
    ValidationError,
    WrapValidator,
)

from dlq.actions.errors import ActionError
from dlq.broker.codec import MAX_NESTING, TYPE_NAMES, AmqpValueError, encode_table

TYPED_VALUE_DOC = """An AMQP field value in typed JSON, so every wire type survives a round trip.

`type` is one of the AMQP table types; the value is in `value`, or in `base64` for raw bytes:

- `{"type": "longstr", "value": "text"}`; a long string that is not UTF-8:
  `{"type": "longstr", "base64": "..."}`
- `{"type": "bytes", "base64": "..."}` (byte array)
- `{"type": "bool", "value": true}`
- `{"type": "int8" | "uint8" | "int16" | "uint16" | "int32" | "uint32" | "int64", "value": 12}`
- `{"type": "float" | "double", "value": 1.75}`; non-finite values are the strings
  `"NaN"`, `"Infinity"`, `"-Infinity"`
- `{"type": "decimal", "value": "12.50"}` (a string, exact)
- `{"type": "timestamp", "value": 1700000000}` (whole seconds since 1970, UTC)
- `{"type": "array", "value": [TypedValue, ...]}`
- `{"type": "table", "value": {"name": TypedValue, ...}}`
- `{"type": "void", "value": null}`

A table key (a header name, or a key of a nested table) that is not UTF-8, or that starts
with `base64:`, is given as `base64:` followed by the base64 of its bytes, and is read back
so: every name survives the round trip, and the JSON stays strict (no lone surrogates)."""


class TypedValue(RootModel[dict[str, Any]]):
    """A header value, passed through as stored; the class only names it in the schema."""

    model_config = ConfigDict(
        title="TypedValue",
        json_schema_extra={
            "description": TYPED_VALUE_DOC,
            "required": ["type"],
            "properties": {
                "type": {"type": "string", "enum": TYPE_NAMES},
                "value": {"description": "the value; its JSON type follows `type`"},
                "base64": {"type": "string", "description": "raw bytes, base64 (or value)"},
            },
        },
    )


PROPERTIES_DOC = (
    "The message's AMQP basic properties that are set, other than headers, as plain JSON: "
    "content_type, content_encoding, delivery_mode, priority, correlation_id, reply_to, "
    "expiration, message_id, timestamp (seconds since 1970), type, user_id, app_id, "
    'cluster_id. A short string that is not UTF-8 is given as {"base64": "..."}.'
)


TYPED_JSON = (
    " Header values use the typed JSON encoding of the TypedValue schema (the same as the"
    " message detail), so every AMQP field type survives the round trip."
)


class RawShortStr(BaseModel):
    """A short string property that is not UTF-8, as its bytes in base64."""

    model_config = ConfigDict(extra="forbid", title="RawShortStr")
    base64: str


def _one_short_string(value, handler):
    """One message per bad short string, instead of one per member of the union."""
    try:
        return handler(value)
    except ValidationError:
        raise ValueError(
            'must be a string of at most 255 bytes, {"base64": "..."} or null'
        ) from None


ShortProperty = Annotated[
    Annotated[str, Field(max_length=255)] | RawShortStr | None, WrapValidator(_one_short_string)
]


class PropertiesIn(BaseModel):
    """The AMQP basic properties other than headers, as the message detail gives them.

    Short strings are at most 255 bytes (UTF-8), or {"base64": ...} when not UTF-8;
    `timestamp` is whole seconds since 1970. Properties left out (or null) are not set."""

    model_config = ConfigDict(extra="forbid")
    content_type: ShortProperty = None
    content_encoding: ShortProperty = None
    delivery_mode: Annotated[int, Strict(), Field(ge=0, le=255)] | None = Field(
        None,
        description="1 transient, 2 persistent; a new value must be 1 or 2, and one the"
        " message came with (RabbitMQ takes any octet) is kept as it is",
    )
    priority: Annotated[int, Strict(), Field(ge=0, le=255)] | None = Field(
        None, description="0 to 255 (an octet); a priority queue caps it at its maximum"
    )
    correlation_id: ShortProperty = None
    reply_to: ShortProperty = None
    expiration: ShortProperty = Field(None, description="not sent again on replay")
    message_id: ShortProperty = None
    timestamp: Annotated[int, Strict(), Field(ge=0, le=2**64 - 1)] | None = None
    type: ShortProperty = None
    user_id: ShortProperty = None
    app_id: ShortProperty = None
    cluster_id: ShortProperty = None

    def given(self) -> dict:
        return self.model_dump(exclude_none=True)


# A table key (a header name) that is not UTF-8 cannot be a JSON object key that strict
# parsers accept: the API gives it as this prefix and the base64 of its bytes, and so does
# a key that happens to start with the prefix, so that every key reads back exactly.
NAME_PREFIX = "base64:"


def api_names(table: dict) -> dict:
    """A stored typed table (headers), its keys as the API gives them, nested tables too."""
    return {_api_name(key): _api_value(typed) for key, typed in table.items()}


def stored_names(table: dict, path: str = "headers") -> dict:
    """api_names undone: the typed table as stored; ActionError names a key it cannot read."""
    stored, errors = {}, {}
    for key, typed in table.items():
        try:
            stored[_stored_name(key)] = _stored_value(typed, f"{path}.{key}")
        except ValueError as e:
            errors[f"{path}.{key}"] = [str(e)]
    if errors:
        raise ActionError(errors)
    return stored


def _api_name(key: str) -> str:
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        if not key.startswith(NAME_PREFIX):
            return key
    raw = key.encode("utf-8", "surrogateescape")
    return NAME_PREFIX + base64.b64encode(raw).decode()


def _stored_name(key: str) -> str:
    if not key.startswith(NAME_PREFIX):
        return key
    try:
        raw = base64.b64decode(key[len(NAME_PREFIX) :], validate=True)
    except ValueError:
        raise ValueError(f"a name starting {NAME_PREFIX!r} must be base64 after it") from None
    return raw.decode("utf-8", "surrogateescape")


def _api_value(typed):
    if (
        isinstance(typed, dict)
        and isinstance(typed.get("value"), dict)
        and typed.get("type") == "table"
    ):
        return {**typed, "value": api_names(typed["value"])}
    if (
        isinstance(typed, dict)
        and isinstance(typed.get("value"), list)
        and typed.get("type") == "array"
    ):
        return {**typed, "value": [_api_value(item) for item in typed["value"]]}
    return typed


def _stored_value(typed, path: str):
    if (
        isinstance(typed, dict)
        and isinstance(typed.get("value"), dict)
        and typed.get("type") == "table"
    ):
        return {**typed, "value": {_stored_name(k): _stored_value(v, f"{path}.{k}")
                                   for k, v in typed["value"].items()}}  # fmt: skip
    if (
        isinstance(typed, dict)
        and isinstance(typed.get("value"), list)
        and typed.get("type") == "array"
    ):
        return {**typed, "value": [_stored_value(item, path) for item in typed["value"]]}
    return typed


def _shape_problem(typed, path: str, depth: int = 0) -> str | None:
    """Where a typed header value does not have the typed JSON shape (its `type` a known type
    name, tables and arrays of typed values); the values themselves are the encoder's."""
    if depth > MAX_NESTING:
        return f"{path}: nested deeper than {MAX_NESTING}"
    if not isinstance(typed, dict) or typed.get("type") not in TYPE_NAMES:
        return f'{path}: needs {{"type": one of {", ".join(TYPE_NAMES)}, "value": ...}}'
    inner = typed.get("value")
    if typed["type"] == "table" and isinstance(inner, dict):
        items = [(f"{path}.{key}", value) for key, value in inner.items()]
    elif typed["type"] == "array" and isinstance(inner, list):
        items = [(f"{path}[{n}]", value) for n, value in enumerate(inner)]
    else:
        return None
    problems = (_shape_problem(value, where, depth + 1) for where, value in items)
    return next((problem for problem in problems if problem), None)


def checked_headers(headers: dict[str, TypedValue]) -> dict[str, dict]:
    """The headers as plain typed JSON, or ActionError naming each bad header.

    dlq.broker.codec's encoder expects the typed shape (a `type` that is a type name); anything else
    must not reach it (it raised TypeError, a 500, on {"type": {}})."""
    plain = stored_names({key: value.root for key, value in headers.items()})
    errors = {}
    for key, typed in plain.items():
        problem = _shape_problem(typed, f"headers.{key}")
        if problem is None:  # the encoder's own check, so every bad header is named at once
            try:
                encode_table({key: typed})
            except AmqpValueError as e:
                problem = str(e)
        if problem:
            errors[f"headers.{key}"] = [problem]
    if errors:
        raise ActionError(errors)
    return plain
