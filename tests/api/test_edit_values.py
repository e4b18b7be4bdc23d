"""What an edit through the API takes and refuses: an edit that changes nothing is refused as
"no change" (no version, no audit row), values sent again as they were keep their stored
form, any AMQP priority (an octet) is taken and replayed, and numbers with extreme exponents
or digits answer a 400 at once (a decimal `1e999999` held a worker's CPU for most of a
minute)."""

import base64
import json
import time

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dlq.broker import codec
from dlq.models import Message
from dlq.models.actions import AuditEntry, MessageVersion
from tests.factories import client_for, make_message, make_user
from tests.topology import get

pytestmark = pytest.mark.django_db

NO_CHANGE = "no change: the edit leaves the body, headers and properties as they are"
# CPU seconds one request may spend on a header value; the old decimal check spent 35-46 s.
BUDGET = 0.5


@pytest.fixture
def operator():
    return client_for(make_user("operator"), token=True)


def patch(client, message: Message, **fields):
    body = json.dumps({"reason": "operator fix", **fields})
    return client.patch(f"/api/v1/messages/{message.pk}", body, content_type="application/json")


def as_the_detail_gives_it(client, message: Message) -> dict:
    detail = client.get(f"/api/v1/messages/{message.pk}").json()
    return {key: detail[key] for key in ("body_base64", "headers", "properties")}


def test_the_message_sent_back_as_the_detail_gives_it_is_no_change(operator):
    # As it came: a JSON content type over a body that is not JSON, NUL bytes in it.
    message = make_message(body=b"not json\x00\x01", content_type="application/json",
                           headers={"tenant": "acme", "ratio": 0.5}, priority=7)  # fmt: skip
    stored = (bytes(message.body), message.headers_json, message.properties_json)

    response = patch(operator, message, **as_the_detail_gives_it(operator, message))

    assert response.status_code == 400
    assert response.json()["errors"] == {"__all__": [NO_CHANGE]}
    message.refresh_from_db()
    assert (bytes(message.body), message.headers_json, message.properties_json) == stored
    assert not MessageVersion.objects.exists() and not AuditEntry.objects.exists()


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"body_text": "as it was"},
        {"body_base64": base64.b64encode(b"as it was").decode()},
        {"properties": {"delivery_mode": 2, "priority": 4}},
    ],
)
def test_an_edit_that_changes_nothing_is_refused_as_no_change(operator, fields):
    message = make_message(body=b"as it was", delivery_mode=2, priority=4)
    response = patch(operator, message, **fields)
    assert response.status_code == 400
    assert response.json()["errors"] == {"__all__": [NO_CHANGE]}
    assert not MessageVersion.objects.exists() and not AuditEntry.objects.exists()


def test_values_sent_again_as_they_were_keep_their_stored_form(operator):
    """A double 2.0 sent back as 2, the same properties in another order: the same values,
    so the stored JSON (what the next replay encodes) stays as it was."""
    message = make_message(body=b"old", headers={"ratio": 2.0}, delivery_mode=2, priority=4)
    headers_json, properties_json = message.headers_json, message.properties_json
    headers = {**message.headers, "ratio": {"type": "double", "value": 2}}

    response = patch(operator, message, body_text="new", headers=headers,
                     properties={"priority": 4, "delivery_mode": 2})  # fmt: skip

    assert response.status_code == 200, response.content
    message.refresh_from_db()
    assert bytes(message.body) == b"new"
    assert (message.headers_json, message.properties_json) == (headers_json, properties_json)
    assert set(AuditEntry.objects.get(action="edit").diff) == {"body"}


def test_any_amqp_priority_is_edited_and_replayed(operator, channel, top):
    work = top.queue("work")
    message = make_message(queue=top.name("dlq"), died_in=work, exchange="", routing_key=work,
                           body=b"urgent", priority=255)  # fmt: skip

    response = patch(operator, message, properties={**message.properties, "priority": 254})
    assert response.status_code == 200, response.content
    assert response.json()["properties"]["priority"] == 254
    response = patch(operator, message, properties={**message.properties, "priority": 255})
    assert response.status_code == 200, response.content

    replay = operator.post(f"/api/v1/messages/{message.pk}/replay",
                           {"target": "original", "reason": "consumer fixed"},
                           content_type="application/json")  # fmt: skip
    assert replay.json()["outcome"] == "confirmed"
    _, properties, body = get(channel, work)
    assert (body, properties.priority) == (b"urgent", 255)


@pytest.mark.parametrize("priority", [-1, 256, 10**30])
def test_a_priority_outside_an_octet_is_refused(operator, priority):
    message = make_message(priority=3)
    response = patch(operator, message, properties={"priority": priority})
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["properties.priority"]


# --- numbers with extreme exponents and digits ----------------------------------------------

TYPES = ["decimal", "double", "float", "int8", "uint32", "int64", "timestamp"]
exponents = st.one_of(st.integers(-(10**6), 10**6), st.integers(-(10**19), 10**19))
decimal_text = st.builds(
    lambda sign, digits, dot, exponent: f"{sign}{digits}{dot}e{exponent}",
    st.sampled_from(["", "-", "+"]),
    st.from_regex(r"[0-9]{1,40}", fullmatch=True),
    st.sampled_from(["", ".", ".5", ".000001"]),
    exponents,
)
json_numbers = st.one_of(
    st.builds(lambda m, e: f"{m}e{e}", st.integers(-99, 99), exponents),  # 1e400: a float inf
    st.integers(-(10**4000), 10**4000).map(str),  # up to 4001 digits: Python still reads them
)


@pytest.mark.parametrize(
    ("typed", "problem"),
    [
        ('{"type": "decimal", "value": "1e999999"}', "does not fit an AMQP decimal"),
        ('{"type": "decimal", "value": "-1E+999999999999999999"}', "does not fit"),
        ('{"type": "decimal", "value": "1e-999999"}', "does not fit an AMQP decimal"),
        ('{"type": "decimal", "value": "' + "9" * 100_000 + '"}', "(100000 characters)"),
        ('{"type": "double", "value": ' + "9" * 400 + "}", "does not fit a double"),
        ('{"type": "double", "value": 1e400}', "RabbitMQ refuses inf"),
        ('{"type": "decimal", "value": 1e400}', "decimal must be finite"),
    ],
)
def test_extreme_numbers_are_a_400_naming_the_header(operator, typed, problem):
    response, spent = patch_header(operator, make_message(), typed)
    assert spent < BUDGET, f"{spent:.2f} s of CPU"
    assert response.status_code == 400
    [error] = response.json()["errors"]["headers.x"]
    assert problem in error and len(error) < 200


def test_an_integer_past_pythons_digit_limit_is_a_400(operator):
    typed = '{"type": "int64", "value": 1' + "0" * 100_000 + "}"
    response, _ = patch_header(operator, make_message(), typed)
    assert response.status_code == 400
    assert response.json()["detail"]


@given(
    kind=st.sampled_from(TYPES),
    value=st.one_of(decimal_text.map(json.dumps), json_numbers),
)
@example(kind="decimal", value='"1e200000"')  # 1.3 s of CPU before the fix, quadratic
@example(kind="decimal", value='"1e999999999999999999"')  # decimal.Overflow: a 500
@example(kind="double", value="1" + "0" * 400)  # OverflowError in isfinite: a 500
@settings(deadline=None, database=None, max_examples=80,
          suppress_health_check=list(HealthCheck))  # fmt: skip
def test_every_number_answers_at_once_and_never_a_5xx(operator, kind, value):
    message = make_message()
    response, spent = patch_header(operator, message, f'{{"type": "{kind}", "value": {value}}}')
    assert spent < BUDGET, f"{spent:.2f} s of CPU"
    assert response.status_code in (200, 400), response.content[:300]
    if response.status_code == 400:
        assert list(response.json()["errors"]) == ["headers.x"]
    else:  # taken: it goes on the wire as it is stored
        codec.encode_value(Message.objects.get(pk=message.pk).headers["x"])


def patch_header(client, message: Message, typed: str):
    """PATCH one header given as raw JSON text (numbers JSON can hold and Python cannot),
    and the CPU seconds the request took (the client runs the view in this process)."""
    body = '{"reason": "r", "headers": {"x": ' + typed + "}}"
    start = time.process_time()
    response = client.patch(f"/api/v1/messages/{message.pk}", body,
                            content_type="application/json")  # fmt: skip
    return response, time.process_time() - start
