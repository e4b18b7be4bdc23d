"""A sent Telegram alert follows its groups (contract: "the alert message is edited to
show its new state"): an owner set in the console, or a group resolved because nothing of
it is parked, edits the message once on the lifecycle pass; a resolved group that fails
again is a new failure group and alerts at once."""

import logging

import pytest

from dlq.actions import message as message_actions
from dlq.alerts.telegram import polling
from dlq.groups import triage
from dlq.models import AlertButton, Message, TelegramBot
from dlq.tasks.alerts import alert_lifecycle
from tests.alerts.telegram.sent import TOKEN, alert_now, keyboard, telegram_channel
from tests.factories import client_for, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(telegram, default_rule):
    telegram_channel()
    attempt = alert_now("orders.dlq", 2, exception="Timeout")
    return attempt, AlertButton.objects.get(attempt=attempt).group


def test_an_owner_set_in_the_console_edits_the_alert_once(telegram, sent):
    attempt, group = sent
    alert_lifecycle()
    assert not telegram.of("editMessageText")  # nothing changed yet
    owner = make_user("operator")
    triage.update(owner, group, {"owner": owner.username}, "mine now")
    alert_lifecycle()
    [edit] = telegram.of("editMessageText")
    assert (edit.token, edit.payload["message_id"]) == (TOKEN, 1)
    assert f"<b>acknowledged</b> by <code>{owner.username}</code>" in edit.payload["text"]
    alert_lifecycle()
    assert len(telegram.of("editMessageText")) == 1
    # Handed over to another owner: still acknowledged, and the message says who now.
    other = make_user("operator")
    triage.update(other, group, {"owner": other.username}, "taking over")
    alert_lifecycle()
    [_, edit] = telegram.of("editMessageText")
    assert f"<b>acknowledged</b> by <code>{other.username}</code>" in edit.payload["text"]
    alert_lifecycle()
    assert len(telegram.of("editMessageText")) == 2


def test_a_resolved_group_edits_the_alert_and_alerts_again_when_it_fails_again(telegram, sent):
    attempt, group = sent
    admin = make_user("admin")
    for message in Message.objects.filter(group=group):
        message_actions.discard(message.pk, admin, "handled by hand")
    alert_lifecycle()

    [edit] = telegram.of("editMessageText")
    assert "· <b>resolved</b>" in edit.payload["text"]
    assert [b["text"] for b in keyboard(edit)[0]] == ["1 · Open"]  # nothing left to act on
    viewer = client_for(make_user("viewer"), token=True)
    assert viewer.get("/api/v1/alerts").json()["results"][0]["groups"][0]["state"] == "resolved"

    second = alert_now("orders.dlq", 1, exception="Timeout")  # the same group, back again
    assert second.pk != attempt.pk and second.kind == "new_group"
    again = telegram.of("sendMessage")[-1].payload["text"]
    assert again.startswith("<b>New failure group: 1 new dead-lettered messages")
    assert AlertButton.objects.get(attempt=second).group == group


def test_a_webhook_set_elsewhere_is_said_once_and_cleared_when_polling_works(
    telegram, monkeypatch, caplog
):
    channel = telegram_channel()
    monkeypatch.setattr(polling, "BACKOFF", polling.BACKOFF * 0)  # poll at once, every time
    telegram.conflict = True
    with caplog.at_level(logging.WARNING, logger="dlq.telegram"):
        for _ in range(3):
            polling.poll_all()
    assert len(telegram.of("getUpdates")) == 3
    warned = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warned] == ["telegram polling stopped"]
    assert TOKEN not in caplog.text and "SECRET" not in caplog.text
    problem = TelegramBot.objects.get().problem
    assert "a webhook is set for it (409 Conflict)" in problem
    page = client_for(make_user("viewer")).get("/alerts/").content.decode()
    assert f'id="channel-{channel.pk}"' in page and "a webhook is set for it" in page

    telegram.conflict = False
    polling.poll_all()
    assert TelegramBot.objects.get().problem == ""
    page = client_for(make_user("viewer")).get("/alerts/").content.decode()
    assert "a webhook is set" not in page


def test_polling_rests_after_a_problem(telegram):
    telegram_channel()
    telegram.conflict = True
    polling.poll_all()
    polling.poll_all()  # within BACKOFF: Telegram is not asked again
    assert len(telegram.of("getUpdates")) == 1


def test_no_telegram_channel_no_poll(telegram):
    assert polling.poll_all() == 0
    assert telegram.calls == []
