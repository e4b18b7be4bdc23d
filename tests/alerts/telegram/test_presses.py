"""Telegram alerts you can act on, polled (DLQ_TELEGRAM_UPDATES=poll) in this process
against the Bot API stand-in: the keyboard a digest carries, a press done as the linked
console user (answered, the message edited to say who), and every press refused that should
be: a viewer, an unlinked Telegram user, forged buttons, a presser Telegram did not name."""

import pytest

from dlq.alerts.telegram import polling
from dlq.models import AlertButton, AuditEntry, ChatDelivery, GroupTriage, TelegramBot
from tests.alerts.telegram.sent import TOKEN, alert_now, button, keyboard, linked, telegram_channel
from tests.factories import client_for, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(telegram, default_rule):
    """A Telegram alert of one new failure group, as the stand-in got it."""
    telegram_channel()
    attempt = alert_now("orders.dlq", 3, exception="PaymentDeclined")
    [message] = telegram.of("sendMessage")
    return attempt, message


def _press(telegram, user_id, data) -> dict:
    """Press as `user_id`, poll once; the answer the presser saw."""
    answered = len(telegram.of("answerCallbackQuery"))
    telegram.press(TOKEN, user_id, data)
    polling.poll_all()
    return telegram.wait_for("answerCallbackQuery", answered + 1)[-1].payload


def test_a_digest_goes_out_with_numbered_groups_and_their_buttons(sent):
    attempt, message = sent
    [row] = keyboard(message)
    ref = AlertButton.objects.get(attempt=attempt).ref
    assert [b["text"] for b in row] == ["1 · Acknowledge", "1 · Mute 1 h", "1 · Canary", "1 · Open"]
    assert [b.get("callback_data") for b in row[:3]] == [f"dlq:ack:{ref}", f"dlq:mute:{ref}",
                                                         f"dlq:canary:{ref}"]  # fmt: skip
    assert all(len(b["callback_data"].encode()) <= 64 for b in row[:3])
    opens = row[3]["url"]
    assert opens == f"https://console.example/groups/{AlertButton.objects.get().group}/"
    assert "\n1 · <code>PaymentDeclined</code>" in message.payload["text"]
    assert message.payload["parse_mode"] == "HTML" and message.payload["chat_id"] == "-1001"
    attempt.refresh_from_db()
    assert attempt.chat_message == {"chat_id": -1001, "message_id": 1}
    assert attempt.shown_states == {AlertButton.objects.get().group: "open"}


def test_a_linked_operators_acknowledge_sets_the_owner_answers_and_edits_the_alert(telegram, sent):
    attempt, message = sent
    linked("operator", 777001, "oper")
    answer = _press(telegram, 777001, button(message, 1, "Acknowledge")["callback_data"])

    assert answer["text"] == "oper acknowledged this failure group."
    assert answer["show_alert"] is False
    [edit] = telegram.wait_for("editMessageText")
    assert (edit.token, edit.payload["chat_id"], edit.payload["message_id"]) == (TOKEN, -1001, 1)
    assert "· <b>acknowledged</b> by <code>oper</code>" in edit.payload["text"]
    assert [b["text"] for b in keyboard(edit)[0]][0] == "1 · Acknowledge"
    group = AlertButton.objects.get().group
    assert GroupTriage.objects.get(group=group).owner.username == "oper"
    viewer = client_for(make_user("viewer"), token=True)
    [shown] = viewer.get("/api/v1/alerts").json()["results"]
    assert shown["groups"][0]["state"] == "acknowledged"
    assert shown["groups"][0]["acknowledged_by"] == "oper"
    press = AuditEntry.objects.get(action="alert_press")
    assert press.actor_name == "oper" and '"chat_user": "777001"' in press.detail
    attempt.refresh_from_db()
    assert attempt.shown_states == {group: "acknowledged by oper"}
    assert TelegramBot.objects.get().offset > 0 and TelegramBot.objects.get().username


def _nothing_done(telegram):
    assert not GroupTriage.objects.filter(owner__isnull=False).exists()
    assert not AuditEntry.objects.filter(action="alert_press").exists()
    assert not telegram.of("editMessageText")


def test_a_viewer_is_refused(telegram, sent):
    _, message = sent
    linked("viewer", 777002, "watcher")
    answer = _press(telegram, 777002, button(message, 1, "Acknowledge")["callback_data"])
    assert answer["show_alert"] is True
    assert answer["text"] == "watcher is a viewer: a viewer may not Acknowledge."
    _nothing_done(telegram)


def test_an_unlinked_press_is_told_how_to_link_and_does_nothing(telegram, sent):
    _, message = sent
    answer = _press(telegram, 777003, button(message, 1, "Mute 1 h")["callback_data"])
    assert answer["show_alert"] is True
    assert "not linked to a console user" in answer["text"]
    assert "open https://console.example/account/ and use its Telegram link" in answer["text"]
    _nothing_done(telegram)


@pytest.mark.parametrize(
    "data",
    [
        "dlq:ack:AAAAAAAAAAAAAAAA",
        "dlq:delete:{ref}",
        "dlq:ack:{ref}:x",
        "ack:{ref}",
        "dlq:ack:" + "A" * 60,
        "dlq:ack:<b>x</b>",
        "",
        None,
        12,
        {"ref": "x"},
    ],  # fmt: skip
)
def test_forged_callback_data_is_not_a_button_of_this_console(telegram, sent, data):
    _, message = sent
    linked("operator", 777004)
    ref = AlertButton.objects.get().ref
    data = data.format(ref=ref) if isinstance(data, str) else data
    answer = _press(telegram, 777004, data)
    assert answer["show_alert"] is True
    assert answer["text"] in (
        "This is not a button of this console: nothing was done.",
        "This alert is not one this console sent (or it was removed).",
    )
    _nothing_done(telegram)


@pytest.mark.parametrize("presser", ["777005", "abc", 7.5, True, None, -3, 2**80])
def test_a_presser_id_that_is_no_positive_integer_is_refused(telegram, sent, presser):
    _, message = sent
    linked("operator", 777005)  # its string form is a linked user: still refused
    answer = _press(telegram, presser, button(message, 1, "Acknowledge")["callback_data"])
    assert answer["text"] == "Telegram did not say who pressed this button: nothing was done."
    _nothing_done(telegram)


def test_a_redelivered_update_never_repeats_a_press(telegram, sent):
    _, message = sent
    linked("operator", 777006)
    data = button(message, 1, "Mute 1 h")["callback_data"]
    update_id = telegram.press(TOKEN, 777006, data)
    polling.poll_all()
    TelegramBot.objects.update(offset=0)  # as if the offset were lost: Telegram sends it again
    telegram.push(TOKEN, {"update_id": update_id, "callback_query": {
        "id": "again", "from": {"id": 777006}, "data": data}})  # fmt: skip
    polling.poll_all()
    assert AuditEntry.objects.filter(action="alert_press").count() == 1
    assert len(telegram.of("answerCallbackQuery")) == 1
    assert ChatDelivery.objects.filter(key__endswith=f":{update_id}").count() == 1


def test_a_canary_press_starts_its_job_once_the_press_committed(
    telegram, sent, django_capture_on_commit_callbacks
):
    _, message = sent
    linked("operator", 777007, "oper")
    telegram.press(TOKEN, 777007, button(message, 1, "Canary")["callback_data"])
    started = []
    with django_capture_on_commit_callbacks(execute=True) as committed:
        polling.poll_all(start_job=started.append)
    [job] = started
    assert committed and (job.action, job.canary, job.total) == ("replay", 10, 3)
    [answer] = telegram.of("answerCallbackQuery")
    assert answer.payload["text"] == "oper started a canary replay of this failure group."
