"""Telegram presses through a real Celery worker polling the Bot API stand-in, beat's
ticks driven from the test: the digest goes out with its keyboard, a linked operator's
Acknowledge is done, answered and shown; and a worker killed between committing a press and
answering it loses nothing and repeats nothing (the offset is committed with the press)."""

import time

import pytest

from dlq.models import AuditEntry, GroupTriage, Mute, TelegramBot
from dlq.tasks.alerts import evaluate_alerts, telegram_poll
from tests.alertfactory import arrive
from tests.alerts.telegram.sent import TOKEN, button, keyboard, linked, telegram_channel
from tests.celeryworker import Worker
from tests.factories import client_for, make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def setup(telegram, default_rule, top):
    queue = top.celery_queue()
    env = {"DLQ_TELEGRAM_API_URL": telegram.url, "DLQ_TELEGRAM_UPDATES": "poll",
           "DLQ_CONSOLE_URL": "https://console.example"}  # fmt: skip
    started = []

    def worker() -> Worker:
        started.append(Worker(queue, env))
        started[-1].wait_ready()
        return started[-1]

    telegram_channel()
    yield {"queue": queue, "worker": worker}
    telegram.release()
    for w in started:
        w.stop()


def _beat(queue: str):
    """A step for waits: the poll task queued as beat would (at most one waiting)."""
    last = [0.0]

    def tick():
        if time.monotonic() - last[0] > 1.0:
            telegram_poll.apply_async(queue=queue, expires=3)
            last[0] = time.monotonic()

    return tick


def _alerted(telegram, queue: str):
    arrive("orders.dlq", 3, exception="PaymentDeclined")
    evaluate_alerts.apply_async(queue=queue)
    [message] = telegram.wait_for("sendMessage", timeout=60)
    return message


def test_a_press_on_the_worker_is_done_answered_and_shown(telegram, setup):
    worker = setup["worker"]()
    message = _alerted(telegram, setup["queue"])
    assert [b["text"] for b in keyboard(message)[0]][:3] == [
        "1 · Acknowledge", "1 · Mute 1 h", "1 · Canary"]  # fmt: skip
    assert all(len(b.get("callback_data", "").encode()) <= 64 for b in keyboard(message)[0])
    linked("operator", 777101, "oper")

    telegram.press(TOKEN, 777101, button(message, 1, "Acknowledge")["callback_data"])
    [answer] = telegram.wait_for("answerCallbackQuery", step=_beat(setup["queue"]))
    assert answer.payload["text"] == "oper acknowledged this failure group."
    [edit] = telegram.wait_for("editMessageText")
    assert "<b>acknowledged</b> by <code>oper</code>" in edit.payload["text"]
    viewer = client_for(make_user("viewer"), token=True)
    [shown] = viewer.get("/api/v1/alerts").json()["results"][0]["groups"]
    assert (shown["state"], shown["acknowledged_by"]) == ("acknowledged", "oper")
    getme = telegram.of("getMe")
    assert len(getme) == 1 and TelegramBot.objects.get().username == "dlq_test_bot"
    assert "telegram_poll" in worker.output() and "SECRET-bot-token" not in worker.output()


def test_a_worker_killed_before_answering_neither_loses_nor_repeats_a_press(telegram, setup):
    first = setup["worker"]()
    message = _alerted(telegram, setup["queue"])
    linked("operator", 777102, "oper")
    telegram.hold("answerCallbackQuery")  # the worker stops inside its answer
    muted = telegram.press(TOKEN, 777102, button(message, 1, "Mute 1 h")["callback_data"])
    telegram.wait_for("answerCallbackQuery", step=_beat(setup["queue"]))
    first.kill()
    # Committed before the answer: the mute and the offset past its update.
    assert Mute.objects.count() == 1 and TelegramBot.objects.get().offset == muted + 1

    acked = telegram.press(TOKEN, 777102, button(message, 1, "Acknowledge")["callback_data"])
    telegram.release()
    setup["worker"]()
    answers = telegram.wait_for("answerCallbackQuery", 2, step=_beat(setup["queue"]))
    assert answers[1].payload["text"] == "oper acknowledged this failure group."
    assert Mute.objects.count() == 1  # the first press was not done again
    assert GroupTriage.objects.get().owner.username == "oper"
    assert AuditEntry.objects.filter(action="alert_press").count() == 2
    assert TelegramBot.objects.get().offset == acked + 1
    later = [c.payload["offset"] for c in telegram.of("getUpdates") if c.at > answers[0].at]
    assert later and min(later) >= muted + 1
    assert len({a.payload["callback_query_id"] for a in answers}) == 2
