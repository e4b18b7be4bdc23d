"""Hostile values for property-based tests: header names of any bytes, typed values of every
kind, properties as the wire allows them, and text that hides or reorders what follows it.
Shared by the API's round-trip tests and the crawl of every page (tests/web/)."""

from hypothesis import strategies as st

from dlq.broker import amqp, codec
from dlq.broker.properties import properties_to_json

names = st.binary(min_size=1, max_size=12)  # header names are any bytes on the wire


def _text(raw: bytes) -> dict:
    try:
        return {"type": "longstr", "value": raw.decode()}
    except UnicodeDecodeError:
        return {"type": "longstr", "base64": codec.typed(raw)["base64"]}


scalars = st.one_of(
    st.binary(max_size=40).map(_text),
    st.binary(max_size=20).map(lambda b: codec.typed(b) | {"type": "bytes"}),
    st.integers(-(2**63), 2**63 - 1).map(lambda n: {"type": "int64", "value": n}),
    st.integers(-128, 127).map(lambda n: {"type": "int8", "value": n}),
    st.booleans().map(lambda b: {"type": "bool", "value": b}),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: {"type": "double", "value": f}),
    st.just({"type": "void", "value": None}),
    st.integers(0, 2**40).map(lambda n: {"type": "timestamp", "value": n}),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda items: {"type": "array", "value": items}),
        st.dictionaries(names, inner, max_size=3).map(
            lambda table: {"type": "table", "value": table}
        ),
    ),
    max_leaves=6,
)
tables = st.dictionaries(names, values, min_size=1, max_size=4)
short = st.binary(max_size=255).map(
    lambda raw: raw.decode() if raw.isascii() else {"base64": codec.typed(raw)["base64"]}
)
property_sets = st.fixed_dictionaries(
    {},
    optional={
        "content_type": short,
        "content_encoding": short,
        "message_id": short,
        "correlation_id": short,
        "type": short,
        "app_id": short,
        "priority": st.integers(0, 255),
        "delivery_mode": st.integers(0, 255),
        "timestamp": st.integers(0, 2**64 - 1),
    },
)

# Characters that hide (controls), reorder (bidi controls, right-to-left letters) or look
# like markup, mixed with plain ones: what a forged name, type or reason may hold.
SPOOFING = (
    "\x00\x01\x1b\x7f\x85\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
    "\u200e\u200f\u061c\u05d0\u0627<>&\"'"
)
spoofing_text = st.text(
    alphabet=st.one_of(st.sampled_from(SPOOFING), st.characters(codec="utf-8")), max_size=30
)


def typed_headers(table: dict) -> dict:
    """A table of byte names as the console's codec takes it: str keys, the bytes that are
    not UTF-8 as surrogate escapes (codec.decode_table gives them so)."""

    def keyed(typed):
        if typed["type"] == "table":
            return {"type": "table", "value": typed_headers(typed["value"])}
        if typed["type"] == "array":
            return {"type": "array", "value": [keyed(v) for v in typed["value"]]}
        return typed

    return {_key(k): keyed(v) for k, v in table.items()}


def _key(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def as_drained(table: dict) -> dict:
    """The headers as the drainer reads them: encoded for the wire, decoded again."""
    wire = codec.encode_table(typed_headers(table))
    return codec.decode_table(wire, 0)[0]


def props_as_drained(props: dict) -> dict:
    """Properties as the drainer reads them: through the wire and back."""
    wire = b"".join(amqp.make_properties(props, None).encode())
    return properties_to_json(amqp.TypedProperties().decode(wire))
