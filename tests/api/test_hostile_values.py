"""Hostile typed values, header names and bodies, as the broker hands them to the drainer,
through ingest, the API detail (strict JSON: no lone surrogates), the message page and an
edit back (security review finding 4, proved by property-based tests)."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlq.broker import amqp, codec
from dlq.broker.properties import properties_to_json
from dlq.models import Message
from tests.factories import client_for, make_message, make_user

pytestmark = pytest.mark.django_db
PROPERTIES = {"deadline": None, "database": None, "max_examples": 60,
              "suppress_health_check": list(HealthCheck)}  # fmt: skip

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


def props_as_drained(props: dict) -> dict:
    """Properties as the drainer reads them: through the wire and back."""
    wire = b"".join(amqp.make_properties(props, None).encode())
    return properties_to_json(amqp.TypedProperties().decode(wire))


def as_drained(table: dict) -> dict:
    """The headers as the drainer reads them: encoded for the wire, decoded again."""

    def keyed(typed):  # binary names become the codec's str keys (surrogate escapes)
        if typed["type"] == "table":
            return {
                "type": "table",
                "value": {_key(k): keyed(v) for k, v in typed["value"].items()},
            }
        if typed["type"] == "array":
            return {"type": "array", "value": [keyed(v) for v in typed["value"]]}
        return typed

    wire = codec.encode_table({_key(k): keyed(v) for k, v in table.items()})
    return codec.decode_table(wire, 0)[0]


def _key(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def strict(content: bytes):
    """JSON as a strict parser reads it: UTF-8, and no lone surrogate in any string."""

    def check(value):
        if isinstance(value, str):
            value.encode("utf-8")  # raises on a lone surrogate
        elif isinstance(value, dict):
            for k, v in value.items():
                check(k), check(v)
        elif isinstance(value, list):
            for v in value:
                check(v)
        return value

    return check(json.loads(content.decode("utf-8")))


@given(table=tables, body=st.binary(max_size=64), props=property_sets)
@settings(**PROPERTIES)
def test_hostile_headers_round_trip_through_the_api_exactly(table, body, props):
    operator = client_for(make_user("operator"), token=True)
    headers = as_drained(table)
    drained = props_as_drained(props)
    message = make_message(headers=headers, body=body, **drained)
    assert Message.objects.get(pk=message.pk).properties == drained
    stored = dict(Message.objects.get(pk=message.pk).headers)

    response = operator.get(f"/api/v1/messages/{message.pk}")
    assert response.status_code == 200
    detail = strict(response.content)

    # Drop the first header and add one: the API's names go back in as they came out.
    first = next(iter(detail["headers"]))
    edited = {k: v for k, v in detail["headers"].items() if k != first}
    edited["dlq-test-edit"] = {"type": "longstr", "value": "x"}
    patch = {"headers": edited, "reason": "round trip"}
    answer = operator.patch(f"/api/v1/messages/{message.pk}", patch, "application/json")
    assert answer.status_code == 200, answer.content[:500]
    strict(answer.content)
    after = dict(Message.objects.get(pk=message.pk).headers)
    assert after.pop("dlq-test-edit") == {"type": "longstr", "value": "x"}
    assert after == {k: v for k, v in stored.items() if k != next(iter(stored))}  # exactly

    audit = operator.get(f"/api/v1/audit?message={message.pk}")  # the diff names the header
    assert audit.status_code == 200
    strict(audit.content)
    for page in (f"/messages/{message.pk}/", f"/audit/?message={message.pk}"):
        shown = client_for(make_user("viewer")).get(page)
        assert shown.status_code == 200, page
        shown.content.decode("utf-8")


@given(table=tables, props=property_sets, body=st.binary(max_size=64))
@settings(**PROPERTIES)
def test_the_message_page_shows_hostile_headers(table, props, body):
    message = make_message(headers=as_drained(table), body=body, **props_as_drained(props))
    viewer = client_for(make_user("viewer"))
    page = viewer.get(f"/messages/{message.pk}/")
    assert page.status_code == 200
    page.content.decode("utf-8")  # the page is valid UTF-8 whatever the names were
