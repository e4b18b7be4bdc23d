"""Hostile typed values, header names and bodies, as the broker hands them to the drainer,
through ingest, the API detail (strict JSON: no lone surrogates), the message page and an
edit back (security review finding 4, proved by property-based tests)."""

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlq.models import Message
from tests.factories import client_for, make_message, make_user
from tests.hostile import as_drained, property_sets, props_as_drained, tables

pytestmark = pytest.mark.django_db
PROPERTIES = {"deadline": None, "database": None, "max_examples": 60,
              "suppress_health_check": list(HealthCheck)}  # fmt: skip


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
    for role in ("viewer", "operator"):  # the operator's page has the edit form
        page = client_for(make_user(role)).get(f"/messages/{message.pk}/")
        assert page.status_code == 200, role
        page.content.decode("utf-8")  # the page is valid UTF-8 whatever the names were
