"""What a Slack interaction's body and headers may hold, read without a server: any bytes
are a press or a refusal in our words (the view turns one into a 4xx), never an exception;
and the signatures kept against replays are forgotten after a day."""

import json
import time
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dlq.alerts.slack import interactions
from dlq.models import ChatDelivery
from tests.slackapi import SECRET, SlackApi

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=8,
)
PAYLOADS = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(["block_actions", "view_submission"]) | st.text(),
        "user": st.fixed_dictionaries({}, optional={"id": JSON, "username": JSON, "name": JSON}),
        "response_url": JSON,
        "actions": st.lists(
            st.fixed_dictionaries(
                {},
                optional={
                    "action_id": st.sampled_from(list(interactions.ACTIONS)) | JSON,
                    "value": JSON,
                },
            ),  # fmt: skip
            max_size=2,
        )
        | JSON,
    },
)


def _read(body: bytes):
    try:
        return interactions.parse(body)
    except interactions.Refused as e:
        assert e.status == 400 and str(e)
        return None


@given(st.binary(max_size=300))
def test_any_bytes_are_a_press_or_a_400(body):
    _read(body)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(PAYLOADS)
def test_any_payload_is_a_press_or_a_400(payload):
    press = _read(urlencode({"payload": json.dumps(payload)}).encode())
    if press is not None:
        assert all(isinstance(v, str) for v in (press.value, press.user_id, press.response_url))
        assert 0 < len(press.user_id) <= 64 and len(press.user_name) <= 150


@given(st.text(max_size=80) | st.none(), st.text(max_size=80) | st.none())
def test_any_headers_but_slacks_are_a_401(timestamp, signature):
    with pytest.raises(interactions.Refused) as refused:
        interactions.verify(SECRET, timestamp, signature, b"payload=%7B%7D")
    assert refused.value.status == 401


@pytest.mark.django_db
def test_signatures_are_forgotten_after_a_day(monkeypatch):
    monkeypatch.setattr(interactions, "PURGE_EVERY", 1)
    old = ChatDelivery.objects.create(key="slack:old", seen_at=timezone.now() - timedelta(days=2))
    recent = ChatDelivery.objects.create(key="slack:recent", seen_at=timezone.now())
    body = b"payload=%7B%7D"
    headers = SlackApi().sign(body, int(time.time()))

    interactions.verify(SECRET, headers["X-Slack-Request-Timestamp"],
                        headers["X-Slack-Signature"], body)  # fmt: skip

    kept = set(ChatDelivery.objects.values_list("key", flat=True))
    assert old.key not in kept and recent.key in kept
    assert f"slack:{headers['X-Slack-Signature'][3:]}" in kept
