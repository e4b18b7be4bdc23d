"""Upgrading forgets the destination replies that earlier versions kept in attempt errors and
disabled reasons (security review finding 3): the status stays, the reply goes."""

import importlib

import pytest
from django.apps import apps

from dlq.models import AlertAttempt, AlertChannel

pytestmark = pytest.mark.django_db
forget = importlib.import_module("dlq.migrations.0016_forget_remote_replies").forget


def test_it_keeps_the_status_and_drops_the_reply():
    channel = AlertChannel.objects.create(
        kind="webhook", name="old", config={"url": "https://example.com/x"}, enabled=False,
        disabled_reason="2025-01-01 10:00 UTC: webhook answered HTTP 401: token abc123 invalid",
    )  # fmt: skip
    attempt = AlertAttempt.objects.create(
        channel=channel, channel_name="old", kind="test", error="webhook answered HTTP 500: oops",
        not_before="2025-01-01T10:00Z", created_at="2025-01-01T10:00Z",
    )  # fmt: skip
    untouched = AlertAttempt.objects.create(
        channel=channel, channel_name="old", kind="test", error="connection failed: timed out",
        not_before="2025-01-01T10:00Z", created_at="2025-01-01T10:00Z",
    )  # fmt: skip

    forget(apps, None)

    channel.refresh_from_db()
    attempt.refresh_from_db()
    untouched.refresh_from_db()
    assert channel.disabled_reason == (
        "2025-01-01 10:00 UTC: webhook answered HTTP 401 (the reply is not kept)"
    )
    assert attempt.error == "webhook answered HTTP 500 (the reply is not kept)"
    assert untouched.error == "connection failed: timed out"
