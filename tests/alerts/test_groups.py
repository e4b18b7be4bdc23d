import json
from datetime import UTC, datetime, time, timedelta

import pytest
from django.utils import timezone

from dlq.alerts import delivery, engine, mutes
from dlq.models import Message
from tests.alertfactory import add_channel, arrive

pytestmark = pytest.mark.django_db


def run(now):
    return [delivery.deliver_now(attempt_id) for attempt_id in engine.evaluate(now)]


def group_of(message_id: int) -> str:
    return Message.objects.get(id=message_id).group


def bodies(endpoint) -> list[dict]:
    return [r.json() for r in endpoint.requests]


def test_it_alerts_a_new_failure_group_at_once(default_rule, endpoint):
    add_channel("webhook", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    arrive("orders.dlq", 5, at=t0)
    run(t0)  # the first alert: ValueError was new too

    new_ids = arrive("orders.dlq", 40, exception="KeyError", at=t0 + timedelta(minutes=1))
    arrive("orders.dlq", 2, at=t0 + timedelta(minutes=1))
    run(t0 + timedelta(minutes=1))  # well inside the 15-minute digest interval

    first, second = bodies(endpoint)
    assert second["kind"] == "new_group"
    assert second["new_groups"] == [group_of(new_ids[0])]
    assert second["count"] == 42
    assert [(g["exception_type"], g["count"], g["new"]) for g in second["groups"]] == [
        ("KeyError", 40, True),
        ("ValueError", 2, False),
    ]


def test_it_names_a_group_by_its_message_type_and_its_exception(default_rule, endpoint):
    add_channel("slack", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    arrive("orders.dlq", 3, exception="KeyError", message_type="Sales.SubmitInvoice", at=t0)
    run(t0)

    [slack] = endpoint.requests
    assert "Sales.SubmitInvoice · KeyError" in json.dumps(slack.json(), ensure_ascii=False)


def test_it_alerts_once_per_new_group_not_per_message(default_rule, endpoint):
    add_channel("webhook", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    arrive("orders.dlq", 1, at=t0)
    run(t0)
    for minute in range(1, 4):
        arrive("orders.dlq", 10, exception="KeyError", at=t0 + timedelta(minutes=minute))
        run(t0 + timedelta(minutes=minute))

    kinds = [b["kind"] for b in bodies(endpoint)]
    assert kinds == ["new_group", "new_group"]  # later KeyErrors wait for the digest
    run(t0 + timedelta(minutes=17))
    assert [b["count"] for b in bodies(endpoint)] == [1, 10, 20]


def test_it_calls_a_group_new_only_once(default_rule, endpoint):
    add_channel("webhook", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    arrive("orders.dlq", 1, exception="OldError", at=t0)
    run(t0)
    run(t0 + timedelta(minutes=20))
    arrive("orders.dlq", 1, exception="OldError", at=t0 + timedelta(minutes=21))
    run(t0 + timedelta(minutes=21))
    assert [b["kind"] for b in bodies(endpoint)] == ["new_group", "digest"]


def test_it_knows_groups_stored_before_counting_started(default_rule, endpoint):
    add_channel("webhook", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    arrive("orders.dlq", 3, exception="HistoricError", at=t0)
    engine.reset_horizon()
    arrive("orders.dlq", 1, exception="HistoricError", at=t0)
    run(t0)
    assert [(b["kind"], b["count"], b["new_groups"]) for b in bodies(endpoint)] == [
        ("digest", 1, [])
    ]


def test_it_keeps_a_muted_group_silent(default_rule, endpoint):
    add_channel("webhook", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    noisy = arrive("orders.dlq", 1, exception="Noisy", at=t0)
    run(t0)
    mutes.mute(until=t0 + timedelta(hours=2), group=group_of(noisy[0]), reason="known bug")

    arrive("orders.dlq", 500, exception="Noisy", at=t0 + timedelta(minutes=20))
    run(t0 + timedelta(minutes=20))
    arrive("orders.dlq", 3, exception="Other", at=t0 + timedelta(minutes=21))
    run(t0 + timedelta(minutes=21))

    counts = [(b["count"], [g["exception_type"] for g in b["groups"]]) for b in bodies(endpoint)]
    assert counts == [(1, ["Noisy"]), (3, ["Other"])]


def test_it_keeps_a_muted_queue_silent_until_the_mute_ends(default_rule, endpoint):
    add_channel("webhook", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    mutes.mute(until=t0 + timedelta(minutes=30), queue="billing.*", reason="deploy window")
    arrive("billing.dlq", 50, at=t0)
    arrive("orders.dlq", 2, at=t0)
    run(t0)
    arrive("billing.dlq", 7, at=t0 + timedelta(minutes=31))
    run(t0 + timedelta(minutes=31))

    assert [(b["count"], [q["queue"] for q in b["queues"]]) for b in bodies(endpoint)] == [
        (2, ["orders.dlq"]),
        (7, ["billing.dlq"]),
    ]


def test_it_mutes_a_group_only_in_the_queues_named(default_rule, endpoint):
    add_channel("webhook", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    ids = arrive("orders.dlq", 1, exception="E", died_in="shared", at=t0)
    mutes.mute(
        until=t0 + timedelta(hours=1), queue="orders.dlq", group=group_of(ids[0]), reason="r"
    )
    arrive("orders.dlq", 5, exception="E", died_in="shared", at=t0)
    arrive("audit.dlq", 2, exception="E", died_in="shared", at=t0)
    run(t0)
    assert [(b["count"], list(b["queues"][0].values())[:2]) for b in bodies(endpoint)] == [
        (2, ["audit.dlq", 2])
    ]


def test_it_holds_alerts_during_quiet_hours_then_sends_them(default_rule, endpoint):
    add_channel("webhook", endpoint)
    default_rule.quiet_start, default_rule.quiet_end = time(22, 0), time(7, 0)
    default_rule.quiet_tz = "Europe/Berlin"
    default_rule.save()
    night = datetime(2025, 1, 14, 22, 30, tzinfo=UTC)  # 23:30 in Berlin
    arrive("orders.dlq", 4, at=night)
    run(night)
    arrive("orders.dlq", 6, exception="KeyError", at=night + timedelta(hours=3))
    run(night + timedelta(hours=3))
    assert endpoint.requests == []

    morning = datetime(2025, 1, 15, 6, 0, tzinfo=UTC)  # 07:00 in Berlin
    run(morning)
    assert [(b["count"], len(b["new_groups"])) for b in bodies(endpoint)] == [(10, 2)]


def test_it_tells_quiet_hours_across_midnight_in_the_rule_time_zone(default_rule):
    default_rule.quiet_start, default_rule.quiet_end = time(22, 0), time(7, 0)
    default_rule.quiet_tz = "America/New_York"
    at = lambda hour: datetime(2025, 7, 1, hour, 30, tzinfo=UTC)  # noqa: E731 (EDT = UTC-4)
    assert engine.in_quiet_hours(default_rule, at(3))  # 23:30 local
    assert engine.in_quiet_hours(default_rule, at(10))  # 06:30 local
    assert not engine.in_quiet_hours(default_rule, at(11))  # 07:30 local
    assert not engine.in_quiet_hours(default_rule, at(16))
