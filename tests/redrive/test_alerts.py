"""Redrive policies and alerts (contract: "Redrive policies"): an arrival a policy will
redrive is not alerted, an exhausted one is, like any arrival; a policy that trips says so
in one alert, as the real recorder receives it."""

import json

import pytest
from django.utils import timezone

from dlq.alerts import delivery, engine
from dlq.models import AlertAttempt, AlertDigest, Message
from dlq.models.redrive import RedriveDue, RedrivePolicy
from dlq.redrive import policies, tripping
from tests.alertfactory import add_channel, arrive, sent_to

pytestmark = pytest.mark.django_db


def run() -> list[AlertAttempt]:
    """One evaluation pass, every attempt it queued delivered at once."""
    return [delivery.deliver_now(i) for i in engine.evaluate(timezone.now())]


def _policy(queue: str, **changes):
    values = {"name": "flaky", "match": {"queue": queue}, "target": "original",
              "delay_seconds": 30, "backoff": 2, "max_attempts": 1, **changes}  # fmt: skip
    return policies.save("admin", values, "a flaky downstream")


def _said(recorder) -> str:
    return " ".join(json.dumps(r.json()) for r in sent_to(recorder, "slack"))


def test_an_arrival_a_policy_will_redrive_is_not_alerted_an_exhausted_one_is(
    default_rule, endpoint, unique
):
    add_channel("slack", endpoint)
    redriven, other = f"{unique}-pay.dlq", f"{unique}-mail.dlq"
    _policy(redriven)

    arrive(redriven, 3, exception="GatewayTimeout")
    arrive(other, 1, exception="SmtpDown")
    assert len(run()) == 1
    assert "SmtpDown" in _said(endpoint) and "GatewayTimeout" not in _said(endpoint)

    # The policy replayed it once (its max) and it came back: exhausted, so alerted.
    [earlier] = arrive(redriven, 1, exception="GatewayTimeout")
    spent = {"policy": RedrivePolicy.objects.get(), "attempt": 1, "redriven_at": timezone.now()}
    RedriveDue.objects.update_or_create(message_id=earlier, defaults=spent)
    [again] = arrive(redriven, 1, exception="GatewayTimeout")
    Message.objects.filter(pk=again).update(previous_id=earlier, lineage_id=earlier)
    run()
    # Counted into the rule's digest (which goes out when the rule's digest interval says).
    digest = AlertDigest.objects.get(sent_at__isnull=True)
    assert digest.count == 1 and list(digest.queues) == [f"%2F/{redriven}"]


def test_a_tripped_policy_says_so_in_one_alert(endpoint, unique):
    add_channel("slack", endpoint)
    ids = arrive(f"{unique}-pay.dlq", 2, exception="GatewayTimeout")
    policy = _policy(f"{unique}-pay.dlq", trip_returns=2, trip_window_seconds=60)
    RedriveDue.objects.filter(message_id__in=ids).update(returned_at=timezone.now())

    attempts = tripping.check()
    assert tripping.check() == []  # once

    assert len(attempts) == 1 and delivery.deliver_now(attempts[0]).status == "sent"
    [sent] = sent_to(endpoint, "slack")
    text = json.dumps(sent.json())
    assert "A redrive policy tripped" in text and "flaky" in text and "2 of its" in text
    policy.refresh_from_db()
    assert policy.state == "tripped"
