"""A Slack alert delivered to the stand-in (tests/slackapi.py), and chat users linked to
console users, for the Slack tests."""

import pytest

from dlq.alerts import delivery, engine, links
from dlq.models import AlertButton, AlertChannel
from dlq.tasks import alerts as alert_tasks
from tests.alertfactory import arrive
from tests.factories import make_user


@pytest.fixture
def slack_channel(slack, default_rule):
    """A Slack channel posting to the stand-in's incoming webhook, alerts counting from now."""
    return AlertChannel.objects.create(kind="slack", name="ops", config={"url": slack.hook})


def send_alerts() -> None:
    """What is due, sent as the worker sends it."""
    for attempt_id in engine.evaluate():
        delivery.deliver_now(attempt_id)


@pytest.fixture
def alerted(slack, slack_channel):
    """An alert about two new failure groups, as Slack received it."""
    arrive("orders.dlq", 5, exception="TimeoutError", message_type="OrderPlaced")
    arrive("billing.dlq", 3, exception="KeyError")
    send_alerts()
    [alert] = slack.alerts()
    return alert


def group_of(ref: str) -> str:
    return AlertButton.objects.get(ref=ref).group


def linked(role: str | None, chat_user: str, name: str = ""):
    """A console user holding `role`, its Slack user linked."""
    user = make_user(role)
    links.link(user, "slack", chat_user, name or user.username)
    return user


@pytest.fixture
def answered_here(monkeypatch):
    """The answers to presses posted by the Celery task's own code, in the web process
    (tests/alerts/slack/test_worker.py has a real worker do it)."""
    monkeypatch.setattr(
        alert_tasks, "respond", lambda url, message: alert_tasks.slack_respond.apply((url, message))
    )
