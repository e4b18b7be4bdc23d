import threading
import uuid
from datetime import time, timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection, transaction
from django.utils import timezone

from dlq.alerts import delivery, engine
from dlq.models import AlertAttempt, AlertDigest, Message
from tests.alertfactory import add_channel, arrive, sent_to

pytestmark = pytest.mark.django_db


@pytest.fixture
def ten_in_five(default_rule, endpoint):
    """The default rule at 10 messages within 5 minutes, not alerting on a new group alone,
    and a webhook channel to the recorder."""
    add_channel("webhook", endpoint)
    default_rule.threshold, default_rule.window_minutes = 10, 5
    default_rule.alert_new_groups = False
    default_rule.save()


def run(now) -> list[AlertAttempt]:
    """One evaluation pass, then every queued attempt delivered in this process."""
    return [delivery.deliver_now(attempt_id) for attempt_id in engine.evaluate(now)]


def test_it_sends_one_digest_per_channel_for_a_burst(default_rule, endpoint):
    hooks = [add_channel(kind, endpoint) for kind in ("slack", "telegram", "webhook")]
    t0 = timezone.now() - timedelta(hours=1)
    arrive("orders.dlq", 900, at=t0, spread=timedelta(seconds=59), batch=100)
    arrive("billing.dlq", 100, at=t0 + timedelta(seconds=30), batch=7)

    sent = run(t0 + timedelta(seconds=60))
    run(t0 + timedelta(seconds=75))
    run(t0 + timedelta(minutes=5))

    assert [a.status for a in sent] == ["sent", "sent", "sent"]
    assert {a.channel_id for a in sent} == {h.pk for h in hooks}
    assert len(endpoint.requests) == 3
    kinds = ("slack", "telegram", "webhook")
    [slack], [telegram], [webhook] = (sent_to(endpoint, kind) for kind in kinds)
    body = webhook.json()
    assert body["count"] == 1000
    assert {q["queue"]: q["count"] for q in body["queues"]} == {
        "orders.dlq": 900,
        "billing.dlq": 100,
    }
    assert (
        "1000 new dead-lettered messages in 2 queues" in slack.json()["blocks"][0]["text"]["text"]
    )
    assert "1000 new dead-lettered messages in 2 queues" in telegram.json()["text"]


def test_it_counts_every_arrival_once_across_digests(default_rule, endpoint):
    add_channel("webhook", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    for i in range(10):
        arrive("orders.dlq", 100, at=t0 + timedelta(seconds=i))
        run(t0 + timedelta(seconds=i, milliseconds=500))
    run(t0 + timedelta(minutes=14))
    run(t0 + timedelta(minutes=15, seconds=1))

    counts = [r.json()["count"] for r in endpoint.requests]
    assert counts == [100, 900]  # the first at once, the rest one digest interval later


def test_it_holds_a_digest_until_the_interval_has_passed(default_rule, endpoint):
    add_channel("webhook", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    arrive("orders.dlq", 3, at=t0)
    run(t0)
    arrive("orders.dlq", 5, at=t0 + timedelta(minutes=1))

    run(t0 + timedelta(minutes=2))
    run(t0 + timedelta(minutes=14, seconds=59))
    assert [r.json()["count"] for r in endpoint.requests] == [3]
    run(t0 + timedelta(minutes=15))
    assert [r.json()["count"] for r in endpoint.requests] == [3, 5]


@pytest.mark.usefixtures("ten_in_five")
def test_it_alerts_only_when_the_threshold_is_met_within_the_window(endpoint):
    t0 = timezone.now() - timedelta(hours=1)
    arrive("orders.dlq", 9, at=t0)
    run(t0)
    assert endpoint.requests == []

    arrive("orders.dlq", 1, at=t0 + timedelta(minutes=2))
    run(t0 + timedelta(minutes=2))
    assert [r.json()["count"] for r in endpoint.requests] == [10]


@pytest.mark.parametrize("window", [1, 5])
def test_a_burst_counts_in_the_minutes_it_arrived_whenever_it_is_evaluated(
    default_rule, endpoint, window
):
    """The window is the arrivals' own: ten within a minute meet "10 within 1 minute" when
    the pass comes just after the minute turned, and "10 within 5" when it comes five
    minutes late (beat was down). Both were missed: the window ended at the pass."""
    add_channel("webhook", endpoint)
    default_rule.threshold, default_rule.window_minutes = 10, window
    default_rule.alert_new_groups = False
    default_rule.save()
    minute = (timezone.now() - timedelta(hours=1)).replace(second=0, microsecond=0)
    arrive("orders.dlq", 10, at=minute + timedelta(seconds=50), spread=timedelta(seconds=8))

    run(minute + timedelta(minutes=window, seconds=17))
    assert [r.json()["count"] for r in endpoint.requests] == [10]


def test_arrivals_spread_wider_than_the_window_do_not_meet_it(default_rule, endpoint):
    add_channel("webhook", endpoint)
    default_rule.threshold, default_rule.window_minutes = 10, 2
    default_rule.alert_new_groups = False
    default_rule.save()
    minute = (timezone.now() - timedelta(hours=1)).replace(second=0, microsecond=0)
    for at in (0, 2, 4):  # 12 in all, never more than 4 within two minutes
        arrive("orders.dlq", 4, at=minute + timedelta(minutes=at, seconds=30))
        run(minute + timedelta(minutes=at, seconds=40))
    run(minute + timedelta(minutes=5))
    assert endpoint.requests == []


@pytest.mark.usefixtures("ten_in_five")
def test_it_forgets_arrivals_that_stayed_below_the_threshold(default_rule, endpoint):
    t0 = timezone.now() - timedelta(hours=1)
    arrive("orders.dlq", 6, at=t0)
    run(t0)
    run(t0 + timedelta(minutes=6))
    assert not AlertDigest.objects.filter(rule=default_rule).exists()

    arrive("orders.dlq", 10, at=t0 + timedelta(minutes=7))
    run(t0 + timedelta(minutes=7))
    assert [r.json()["count"] for r in endpoint.requests] == [10]


def test_it_only_counts_queues_the_rule_names(default_rule, endpoint):
    add_channel("webhook", endpoint)
    default_rule.queues = "orders.*, payments.dlq"
    default_rule.save()
    t0 = timezone.now() - timedelta(hours=1)
    arrive("orders.dlq", 2, at=t0)
    arrive("payments.dlq", 3, at=t0)
    arrive("billing.dlq", 50, at=t0)
    run(t0)
    assert endpoint.requests[0].json()["count"] == 5


def test_it_skips_ids_of_an_insert_that_rolled_back_after_the_grace(default_rule, endpoint):
    add_channel("webhook", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    with pytest.raises(RuntimeError), transaction.atomic():
        arrive("orders.dlq", 5, at=t0)
        raise RuntimeError("the batch's transaction fails after its ids were taken")
    arrive("orders.dlq", 4, at=t0)

    run(t0)
    assert endpoint.requests == []  # a hole below visible rows may still be committing
    run(t0 + engine.GAP_GRACE)
    assert [r.json()["count"] for r in endpoint.requests] == [4]


@pytest.mark.django_db(transaction=True)
def test_it_waits_for_a_batch_that_is_still_committing(default_rule, endpoint):
    add_channel("webhook", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    stored, release = threading.Event(), threading.Event()

    def slow_batch():
        try:
            with transaction.atomic():
                arrive("orders.dlq", 300, at=t0)
                stored.set()
                release.wait(10)
        finally:
            connection.close()

    writer = threading.Thread(target=slow_batch)
    writer.start()
    assert stored.wait(10)
    # Later ids, committed first (another queue: batches of one queue serialise on its row).
    arrive("billing.dlq", 200, at=t0)
    assert Message.objects.count() == 200

    run(t0)
    assert endpoint.requests == []
    release.set()
    writer.join()
    run(t0 + timedelta(seconds=15))
    run(t0 + timedelta(minutes=20))
    assert [r.json()["count"] for r in endpoint.requests] == [500]


def test_it_sends_nothing_without_arrivals(default_rule, endpoint):
    add_channel("webhook", endpoint)
    run(timezone.now())
    assert endpoint.requests == []
    assert AlertAttempt.objects.count() == 0


def test_it_sends_to_the_rule_channels_only(default_rule, endpoint):
    mine, other = add_channel("webhook", endpoint), add_channel("slack", endpoint)
    rule = engine.create_rule(f"orders-{uuid.uuid4().hex[:4]}", channels=[mine], queues="o*")
    default_rule.enabled = False
    default_rule.save()
    t0 = timezone.now() - timedelta(hours=1)
    arrive("orders.dlq", 2, at=t0)
    sent = run(t0)
    assert [(a.channel_id, a.rule_id) for a in sent] == [(mine.pk, rule.pk)]
    assert other.pk not in {a.channel_id for a in AlertAttempt.objects.all()}


def test_it_validates_a_rule(default_rule):
    default_rule.queues, default_rule.quiet_tz = " , ", "Mars/Olympus"
    default_rule.quiet_start = None
    with pytest.raises(ValidationError) as invalid:
        default_rule.full_clean()
    assert {"queues", "quiet_tz"} <= set(invalid.value.message_dict)
    default_rule.quiet_start, default_rule.quiet_end = time(22), None
    with pytest.raises(ValidationError, match="both a start and an end"):
        default_rule.full_clean()
