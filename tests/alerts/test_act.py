"""presses.act, shared by a chat press and the Sent alerts page: a press still does what it
did (the linked user's role, both audit rows under one request id, a Canary's job for the
caller), and act refuses an action it does not know."""

import pytest

from dlq.actions.errors import ActionError
from dlq.alerts import links, presses
from dlq.models import AlertButton, AuditEntry, GroupTriage
from tests.factories import make_user
from tests.sentalerts import failure_group, sent_alert

pytestmark = pytest.mark.django_db


@pytest.fixture
def button():
    group = failure_group("orders", 3)
    return AlertButton.objects.create(ref="r" * 16, attempt=sent_alert({group: 3}), group=group,
                                      position=1)  # fmt: skip


def test_a_linked_operators_press_acknowledges_audited_twice_under_one_request_id(button):
    operator = make_user("operator")
    links.link(operator, "slack", "U0OP")

    outcome = presses.press("slack", "U0OP", "ack", button.ref)

    assert outcome.done and outcome.job is None
    assert outcome.text == f"{operator.username} acknowledged this failure group."
    assert GroupTriage.objects.get(group=button.group).owner == operator
    press, update = (AuditEntry.objects.get(action=a) for a in ("alert_press", "group_update"))
    assert press.request_id == update.request_id and press.request_id.startswith("slack-")
    assert update.reason == "Acknowledge pressed in Slack"


def test_a_canary_press_hands_its_job_to_the_caller(button):
    links.link(make_user("operator"), "telegram", "99")

    outcome = presses.press("telegram", "99", "canary", button.ref)

    assert outcome.done and outcome.job.canary == 10 and outcome.job.total == 3
    assert AuditEntry.objects.get(action="alert_press").job_id == outcome.job.pk


def test_a_viewers_press_does_nothing(button):
    links.link(make_user("viewer"), "slack", "U0VIEW")

    outcome = presses.press("slack", "U0VIEW", "mute", button.ref)

    assert not outcome.done and "a viewer may not Mute 1 h" in outcome.text
    assert not AuditEntry.objects.exclude(action="chat_link").exists()


def test_act_refuses_an_action_it_does_not_know(button):
    with pytest.raises(ActionError) as refused:
        presses.act(make_user("operator"), button.group, "delete", "why", "req-1")
    assert presses.said(refused.value) == "one of ack, mute, canary"
