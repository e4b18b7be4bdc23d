"""A button press, whatever chat it came from (dlq/alerts/presses.py): done only for a linked
console user whose role may, on a group this console alerted and still stores; each press
that does something audited with `via` and the chat user's id. The chat adapters' own tests
(Slack, Telegram) press through real HTTP; these pin the rules every adapter shares."""

from datetime import timedelta

import pytest
from django.utils import timezone

from dlq.alerts import links, presses
from dlq.models import (
    AlertAttempt,
    AlertButton,
    AttemptStatus,
    AuditEntry,
    ChatLink,
    GroupTriage,
    Job,
    LinkCode,
    Message,
    Mute,
)
from tests.factories import make_messages, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def button():
    message = make_messages(3, queue="payments.dlq")[0]
    now = timezone.now()
    attempt = AlertAttempt.objects.create(channel_name="ops", kind="digest", not_before=now,
                                          status=AttemptStatus.SENT, created_at=now)  # fmt: skip
    ref = presses.buttons_for(attempt, [message.group])[message.group]
    return ref, message.group


def _user(role, username=""):
    user = make_user(role)
    if username:
        user.username = username
        user.save()
    return user


def _linked(role, via="telegram", chat_user="4242", username=""):
    user = _user(role, username)
    ChatLink.objects.create(user=user, via=via, chat_user=chat_user)
    return user


def test_a_linked_operators_acknowledge_makes_them_owner_and_is_audited_with_via(button):
    ref, group = button
    oper = _linked("operator", username="oper")
    outcome = presses.press("telegram", "4242", "ack", ref)
    assert outcome.done and "oper acknowledged" in outcome.text
    triage = GroupTriage.objects.get(group=group)
    assert triage.owner == oper and triage.owned_at is not None
    press = AuditEntry.objects.get(action="alert_press")
    assert press.actor_name == "oper"
    assert '"via": "telegram"' in press.detail and '"chat_user": "4242"' in press.detail
    own = AuditEntry.objects.get(action="group_update")
    assert own.request_id == press.request_id and own.actor_name == "oper"


def test_mute_is_an_hour_on_that_group_and_canary_a_safe_job_of_ten(button):
    ref, group = button
    _linked("operator")
    assert presses.press("telegram", "4242", "mute", ref).done
    mute = Mute.objects.get()
    assert mute.group == group and mute.queue == ""
    left = mute.until - timezone.now()
    assert timedelta(minutes=59) < left <= timedelta(hours=1)
    outcome = presses.press("telegram", "4242", "canary", ref)
    assert outcome.done and outcome.job is not None
    job = Job.objects.get()
    assert (job.action, job.canary, job.total) == ("replay", 10, 3)
    assert job.created_by == outcome.user.get_username()


@pytest.mark.parametrize("action", ["ack", "mute", "canary"])
def test_a_viewers_press_is_refused_with_the_reason_and_does_nothing(button, action):
    ref, _ = button
    _linked("viewer", username="vera")
    outcome = presses.press("telegram", "4242", action, ref)
    assert not outcome.done and "vera is a viewer" in outcome.text
    assert not GroupTriage.objects.exists() and not Mute.objects.exists()
    assert not Job.objects.exists() and not AuditEntry.objects.exists()


def test_an_unlinked_press_does_nothing_and_asks_to_link(button):
    ref, _ = button
    _linked("operator", chat_user="1")
    outcome = presses.press("telegram", "2", "ack", ref)
    assert outcome.unlinked and not outcome.done and outcome.user is None
    assert not GroupTriage.objects.exists() and not AuditEntry.objects.exists()
    # A Slack user id never matches a Telegram link of the same digits.
    assert presses.press("slack", "1", "ack", ref).unlinked


def test_a_deactivated_or_demoted_user_is_refused_at_the_next_press(button):
    ref, _ = button
    user = _linked("operator", username="gone")
    user.is_active = False
    user.save()
    outcome = presses.press("telegram", "4242", "ack", ref)
    assert not outcome.done and "not active" in outcome.text
    user.is_active = True
    user.save()
    user.groups.clear()
    outcome = presses.press("telegram", "4242", "ack", ref)
    assert not outcome.done and "has no role" in outcome.text
    assert not GroupTriage.objects.exists()


@pytest.mark.parametrize("ref", ["", "x" * 16, "x" * 500, None, 7, ["a"]])
def test_a_forged_or_foreign_reference_is_refused(button, ref):
    _linked("operator")
    outcome = presses.press("telegram", "4242", "ack", ref)
    assert not outcome.done and "not one this console sent" in outcome.text
    assert not AuditEntry.objects.exists()


@pytest.mark.parametrize("action", ["", "discard", "ACK", None, "dlq_ack"])
def test_an_unknown_action_is_refused(button, action):
    ref, _ = button
    _linked("operator")
    outcome = presses.press("telegram", "4242", action, ref)
    assert not outcome.done and "not one the console knows" in outcome.text


def test_a_press_for_a_group_nothing_of_is_stored_any_more(button):
    ref, _ = button
    _linked("operator")
    Message.objects.all().delete()
    outcome = presses.press("telegram", "4242", "ack", ref)
    assert not outcome.done and "Nothing of this failure group" in outcome.text


def test_references_are_opaque_short_and_made_once_per_alert(button):
    ref, group = button
    assert len(f"dlq:canary:{ref}".encode()) <= 64 and group not in ref
    attempt = AlertButton.objects.get(ref=ref).attempt
    assert presses.buttons_for(attempt, [group]) == {group: ref}


# --- linking ------------------------------------------------------------------------


def test_a_telegram_code_links_the_sender_once_and_is_audited():
    user = _user("operator", "oper")
    code = links.telegram_code(user, "bot-key")
    assert code not in str(list(LinkCode.objects.values()))  # only its hash is kept
    made = links.redeem(code, "telegram", chat_user="99", chat_name="@oper")
    assert (made.user, made.via, made.chat_user) == (user, "telegram", "99")
    with pytest.raises(links.LinkError, match="used already"):
        links.redeem(code, "telegram", chat_user="100")
    entry = AuditEntry.objects.get(action="chat_link")
    assert entry.actor_name == "oper" and '"chat_user": "99"' in entry.detail


def test_a_slack_code_links_whoever_opens_it_and_expires_after_ten_minutes():
    code = links.slack_code("U123", "ana")
    user = _user("operator", "ana")
    assert links.redeem(code, "slack", user=user).chat_user == "U123"
    late = links.slack_code("U456")
    LinkCode.objects.filter(chat_user="U456").update(expires_at=timezone.now())
    with pytest.raises(links.LinkError, match="expired"):
        links.redeem(late, "slack", user=user)


@pytest.mark.parametrize("code", ["", "short", "x" * 65, "a b c d e f g h i j k l m n", None])
def test_a_forged_code_is_refused(code):
    with pytest.raises(links.LinkError, match="not valid"):
        links.redeem(code, "slack", user=make_user("operator"))


def test_a_code_of_one_chat_does_not_link_in_the_other():
    code = links.slack_code("U1")
    with pytest.raises(links.LinkError, match="not valid"):
        links.redeem(code, "telegram", chat_user="5")


def test_linking_a_chat_user_again_moves_the_link_and_audits_both():
    first, second = _user("operator", "a"), _user("operator", "b")
    links.link(first, "slack", "U1")
    links.link(second, "slack", "U1")
    assert ChatLink.objects.get().user == second
    actions = list(AuditEntry.objects.order_by("id").values_list("action", flat=True))
    assert actions == ["chat_link", "chat_unlink", "chat_link"]
