"""Telegram's webhook (DLQ_TELEGRAM_UPDATES=webhook): only a request with the webhook's
secret token does anything; the bot that answers is the one the update names (a button's
alert, a link code's bot). And `/start CODE`, the one way a Telegram user is linked: each
code once, for ten minutes, to the bot it was made for."""

import json
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from dlq.alerts import links
from dlq.alerts.telegram import bots, polling, updates
from dlq.models import AuditEntry, ChatDelivery, ChatLink, GroupTriage, LinkCode
from tests.alerts.telegram.sent import TOKEN, alert_now, button, linked, telegram_channel
from tests.factories import make_user

pytestmark = pytest.mark.django_db

SECRET = "webhook-secret-0123456789abcdef"
URL = "/integrations/telegram/webhook"


@pytest.fixture
def webhook(telegram, settings):
    settings.DLQ_TELEGRAM_UPDATES = "webhook"
    settings.DLQ_TELEGRAM_WEBHOOK_SECRET = SECRET
    return telegram


def _post(body, secret=SECRET, **headers):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    if secret is not None:
        headers["X-Telegram-Bot-Api-Secret-Token"] = secret
    return Client().post(URL, data, content_type="application/json", headers=headers)


def _pressed(update_id: int, user_id, data) -> dict:
    return {"update_id": update_id, "callback_query": {
        "id": f"cq{update_id}", "from": {"id": user_id}, "data": data}}  # fmt: skip


def _start(update_id: int, user_id: int, text: str) -> dict:
    return {"update_id": update_id, "message": {"message_id": 1, "text": text,
            "from": {"id": user_id, "username": "ops_tg"},
            "chat": {"id": user_id, "type": "private"}}}  # fmt: skip


@pytest.fixture
def pressable(webhook, default_rule):
    telegram_channel()
    alert_now()
    [message] = webhook.of("sendMessage")
    linked("operator", 880001, "oper")
    return button(message, 1, "Acknowledge")["callback_data"]


def test_a_press_with_the_secret_is_done_and_answered_by_the_alerts_bot(webhook, pressable):
    response = _post(_pressed(1, 880001, pressable))
    assert response.status_code == 200
    [answer] = webhook.of("answerCallbackQuery")
    assert answer.token == TOKEN
    assert answer.payload["text"] == "oper acknowledged this failure group."
    assert webhook.of("editMessageText")[0].token == TOKEN
    assert GroupTriage.objects.get().owner.username == "oper"
    # Telegram sends an update again when it doubts we got it: nothing is done twice.
    assert _post(_pressed(1, 880001, pressable)).status_code == 200
    assert AuditEntry.objects.filter(action="alert_press").count() == 1
    assert len(webhook.of("answerCallbackQuery")) == 1


@pytest.mark.parametrize("secret", [None, "", "wrong", SECRET[:-1], SECRET + "x"])
def test_without_the_right_secret_it_is_401_and_nothing_happens(webhook, pressable, secret):
    response = _post(_pressed(2, 880001, pressable), secret=secret)
    assert response.status_code == 401
    assert not ChatDelivery.objects.exists() and not GroupTriage.objects.exists()
    assert webhook.methods() == ["sendMessage"]  # the alert itself, nothing since


def test_it_is_404_unless_updates_come_by_webhook(webhook, settings):
    settings.DLQ_TELEGRAM_UPDATES = "poll"
    assert _post(_pressed(3, 1, "x")).status_code == 404
    settings.DLQ_TELEGRAM_UPDATES = "off"
    assert _post(_pressed(3, 1, "x")).status_code == 404


@pytest.mark.parametrize(
    "body, status",
    [
        (b"{not json", 400),
        (b"[1, 2]", 400),
        (b"\xff\xfe", 400),
        (b"[" * 100_000, 413),
        (json.dumps({"update_id": 1, "pad": "x" * 70_000}).encode(), 413),
    ],  # fmt: skip
)
def test_a_malformed_or_oversized_body_is_refused(webhook, body, status):
    assert _post(body).status_code == status
    assert not ChatDelivery.objects.exists()


def test_a_get_is_not_allowed(webhook):
    assert Client().get(URL, headers={"X-Telegram-Bot-Api-Secret-Token": SECRET}).status_code == 405


@pytest.mark.parametrize(
    "update",
    [
        {},
        {"update_id": "1"},
        {"update_id": True, "message": {}},
        {"update_id": -1, "message": {}},
        {"update_id": 4, "callback_query": []},
        {"update_id": 5, "callback_query": {"data": None}},
        {"update_id": 6, "message": {"text": ["/start"]}},
        {"update_id": 7, "edited_message": {}},
        {"update_id": 8, "message": {"text": "/start " + "A" * 40, "chat": "x"}},
        {"update_id": 2**70, "message": {"text": "/start"}},
    ],  # fmt: skip
)
def test_hostile_updates_are_answered_with_nothing_and_never_fail(webhook, update):
    assert _post(update).status_code == 200
    assert webhook.methods() == []


def test_start_code_links_the_sender_once(telegram, settings):
    channel = telegram_channel()
    user = make_user("operator")
    user.username = "alice"
    user.save()
    code = links.telegram_code(user, bots.bot_key(channel.config["token"]))
    telegram.say(TOKEN, 990001, f"/start {code}", username="alice_tg")
    telegram.say(TOKEN, 990002, f"/start {code}")  # the same code again, by someone else
    polling.poll_all()

    first, second = telegram.wait_for("sendMessage", 2)
    assert first.payload == {"chat_id": 990001, "text": "Linked to console user alice: the "
                             "buttons of the console's alerts now act as that user."}  # fmt: skip
    assert second.payload["text"] == "This link code was used already: ask for a new one."
    link = ChatLink.objects.get()
    assert (link.user, link.chat_user, link.chat_name) == (user, "990001", "alice_tg")
    assert AuditEntry.objects.filter(action="chat_link", actor_name="alice").count() == 1


def test_an_expired_or_forged_code_or_another_bots_is_refused(telegram):
    channel = telegram_channel()
    telegram_channel("other-bot", token="999:OTHER-token-abcdef")
    user = make_user("operator")
    key = bots.bot_key(channel.config["token"])
    expired = links.telegram_code(user, key)
    LinkCode.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    others = links.telegram_code(user, bots.bot_key("999:OTHER-token-abcdef"))
    for text in (f"/start {expired}", "/start " + "F" * 32, f"/start {others}", "/start <b>"):
        telegram.say(TOKEN, 990003, text)
    polling.poll_all()
    said = [c.payload["text"] for c in telegram.wait_for("sendMessage", 4)]
    assert said == [
        "This link code has expired (codes last 10 minutes): ask for a new one.",
        "This link code is not valid.",
        "This link code is for another bot of the console: nothing was linked.",
        "This link code is not valid.",
    ]
    assert not ChatLink.objects.exists()


def test_by_webhook_start_is_answered_by_the_codes_bot_and_a_forged_code_by_none(webhook):
    channel = telegram_channel()
    code = links.telegram_code(make_user("operator"), bots.bot_key(channel.config["token"]))
    assert _post(_start(10, 990004, f"/start {code}")).status_code == 200
    assert _post(_start(11, 990005, "/start " + "F" * 32)).status_code == 200
    [reply] = webhook.of("sendMessage")
    assert reply.token == TOKEN and reply.payload["text"].startswith("Linked to console user")
    assert ChatLink.objects.get().chat_user == "990004"


def test_handle_never_raises_on_garbage(telegram):
    for update in (None, [], "x", 1, {"update_id": 1, "callback_query": {"id": "q", "from": []}}):
        assert updates.handle(update) == 0
