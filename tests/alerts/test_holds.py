"""A failure group on hold (issue 27, point 2): its arrivals are stored and counted but not
alerted; when the hold ends, the next digest names the group with what arrived during the
hold, in Slack and Telegram as the real recorder receives them. A hold in the past is
refused."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from dlq.actions.errors import ActionError
from dlq.alerts import delivery, engine
from dlq.groups import triage, worklist
from dlq.models import AlertAttempt, GroupTriage, Message
from tests.alertfactory import add_channel, arrive, sent_to
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def run(now) -> list[AlertAttempt]:
    """One evaluation pass at `now` (later than the clock: a hold ends in the future), then
    every attempt it queued delivered at once, not at `now`."""
    ids = engine.evaluate(now)
    AlertAttempt.objects.filter(id__in=ids).update(not_before=timezone.now())
    return [delivery.deliver_now(attempt_id) for attempt_id in ids]


def said(recorder, kind: str, since: int = 0) -> list[str]:
    """What each channel of `kind` was sent, as text, from the `since`-th request on."""
    return [json.dumps(r.json(), ensure_ascii=False) for r in sent_to(recorder, kind)[since:]]


def test_a_held_group_is_counted_not_alerted_and_named_when_the_hold_ends(
    default_rule, endpoint, unique
):
    for kind in ("slack", "telegram"):
        add_channel(kind, endpoint)
    held_q, other_q = f"{unique}-pay.dlq", f"{unique}-mail.dlq"
    first = arrive(held_q, 2, exception="CardDeclined")
    group = Message.objects.get(pk=first[0]).group
    assert len(run(timezone.now())) == 2  # a new group: alerted at once, on both channels
    operator = make_user("operator")
    hold_until = timezone.now() + timedelta(hours=1)
    triage.update(operator, group, {"hold_until": hold_until}, "waiting for the PSP")
    t0 = timezone.now()

    arrive(held_q, 5, exception="CardDeclined", at=t0 + timedelta(minutes=1))
    arrive(other_q, 1, exception="SmtpDown", at=t0 + timedelta(minutes=1))
    during = run(t0 + timedelta(minutes=20))

    assert len(during) == 2
    for text in said(endpoint, "slack", 1) + said(endpoint, "telegram", 1):
        assert "SmtpDown" in text and "CardDeclined" not in text
    stored = worklist.one(group)
    assert (stored["parked"], stored["state"]) == (7, "on_hold")  # stored and counted

    arrive(held_q, 3, exception="CardDeclined", at=t0 + timedelta(minutes=30))
    assert run(t0 + timedelta(minutes=40)) == []  # only held arrivals: nothing to say

    after = run(hold_until + timedelta(seconds=1))

    assert [a.status for a in after] == ["sent", "sent"]
    [slack], [telegram] = said(endpoint, "slack", 2), said(endpoint, "telegram", 2)
    for text in (slack, telegram):
        assert "CardDeclined" in text and "8 arrived on hold until" in text
        assert f"{hold_until:%Y-%m-%d %H:%M} UTC" in text
        assert "SmtpDown" not in text
    assert GroupTriage.objects.get(group=group).held_from is None  # named once
    ended = hold_until + timedelta(seconds=1)
    assert worklist.state_of(10, GroupTriage.objects.get(group=group), ended) == "new"

    arrive(held_q, 1, exception="CardDeclined", at=hold_until + timedelta(minutes=2))
    later = run(hold_until + timedelta(minutes=20))
    assert len(later) == 2
    assert "arrived on hold" not in said(endpoint, "slack", 3)[0]
    assert "CardDeclined" in said(endpoint, "slack", 3)[0]


def test_a_lifted_hold_names_its_arrivals_in_the_next_digest(default_rule, endpoint, unique):
    add_channel("webhook", endpoint)
    queue = f"{unique}.dlq"
    group = Message.objects.get(pk=arrive(queue, 1, exception="Boom")[0]).group
    run(timezone.now())
    operator = make_user("operator")
    triage.update(operator, group, {"hold_until": timezone.now() + timedelta(days=1)}, "later")
    arrive(queue, 4, exception="Boom", at=timezone.now() + timedelta(seconds=1))
    assert run(timezone.now() + timedelta(minutes=16)) == []

    triage.update(operator, group, {"hold_until": None}, "the fix is out")
    [sent] = run(timezone.now() + timedelta(minutes=17))

    body = endpoint.requests[-1].json()
    assert sent.status == "sent" and body["count"] == 4
    [item] = body["groups"]
    assert (item["group"], item["held"], item["count"]) == (group, 4, 4)


def test_a_hold_in_the_past_is_refused(default_rule, unique):
    group = Message.objects.get(pk=arrive(f"{unique}.dlq", 1)[0]).group
    with pytest.raises(ActionError) as refused:
        triage.update(make_user("operator"), group,
                      {"hold_until": timezone.now() - timedelta(seconds=1)}, "oops")  # fmt: skip
    assert list(refused.value.errors) == ["hold_until"]
    assert not GroupTriage.objects.filter(group=group).exists()
