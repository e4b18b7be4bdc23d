"""Edits of hostile messages get a clear answer, never a 500 (security review findings 4, 5
and 7): a content type that is not UTF-8, a JSON body nested 100,000 deep, a JSON content type
over a body that is not JSON, and property values RabbitMQ would close the channel on."""

import pytest

from dlq.models import Message
from tests.factories import client_for, make_message, make_user

pytestmark = pytest.mark.django_db

DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.fixture
def operator():
    return client_for(make_user("operator"), token=True)


def patch(client, message: Message, **changes):
    body = {"reason": "operator fix", **changes}
    return client.patch(f"/api/v1/messages/{message.pk}", body, content_type="application/json")


def test_a_content_type_that_is_not_utf8_can_be_edited(operator):
    raw = {"base64": "YXBwbGljYXRpb24v/2pzb24="}  # b"application/\xffjson", as stored
    message = make_message(body=b"\xff\xfe", content_type=raw)

    response = patch(operator, message, body_text="fixed")

    assert response.status_code == 200, response.content
    message.refresh_from_db()
    assert bytes(message.body) == b"fixed"
    assert message.properties["content_type"] == raw


def test_a_json_body_nested_too_deep_is_refused_with_a_reason(operator):
    message = make_message(body=b"{}", content_type="application/json")

    response = patch(operator, message, body_text=DEEP.decode())

    assert response.status_code == 400
    assert "nests too deeply" in response.json()["errors"]["body_text"][0]
    message.refresh_from_db()
    assert bytes(message.body) == b"{}"


@pytest.mark.parametrize(
    "stored", [DEEP, b"{not json", b"\x1f\x8b not gzip either"], ids=["deep", "broken", "bytes"]
)
def test_a_headers_or_properties_edit_leaves_the_body_alone(operator, stored):
    message = make_message(body=stored, content_type="application/json")

    headers = {**message.headers, "tenant": {"type": "longstr", "value": "acme"}}
    assert patch(operator, message, headers=headers).status_code == 200
    properties = {**message.properties, "app_id": "billing"}
    assert patch(operator, message, properties=properties).status_code == 200

    message.refresh_from_db()
    assert bytes(message.body) == stored
    assert message.headers["tenant"]["value"] == "acme"
    assert message.properties["app_id"] == "billing"


@pytest.mark.parametrize(
    ("name", "value"),
    [("delivery_mode", 0), ("delivery_mode", 3), ("priority", 256), ("priority", -1)],
)
def test_property_values_the_broker_refuses_are_refused_at_edit_time(operator, name, value):
    message = make_message(body=b"{}", content_type="application/json", delivery_mode=2)

    response = patch(operator, message, properties={**message.properties, name: value})

    assert response.status_code == 400
    assert list(response.json()["errors"]) == [f"properties.{name}"]
    message.refresh_from_db()
    assert message.properties["delivery_mode"] == 2 and "priority" not in message.properties


def test_the_action_itself_refuses_them_too():
    """Whatever calls the action (a page, a script), not only the API's schema."""
    from dlq.actions import message as message_actions

    message = make_message(body=b"{}")
    with pytest.raises(message_actions.ActionError) as refused:
        message_actions.edit(message.pk, "carol", "r", properties={"delivery_mode": 0})
    assert refused.value.errors == {"properties.delivery_mode": ["must be 1 to 2"]}


def test_a_value_the_message_came_with_is_kept_whatever_its_range(operator):
    """RabbitMQ takes any delivery_mode octet: a message that came with 0 is edited without
    changing it, and only a new value must be 1 or 2."""
    message = make_message(body=b"{}", content_type="application/json", delivery_mode=0)

    response = patch(operator, message, body_text='{"fixed": true}', properties=message.properties)

    assert response.status_code == 200, response.content.decode()
    message.refresh_from_db()
    assert bytes(message.body) == b'{"fixed": true}' and message.properties["delivery_mode"] == 0
    response = patch(operator, message, properties={**message.properties, "delivery_mode": 3})
    assert list(response.json()["errors"]) == ["properties.delivery_mode"]
