"""Alerts across vhosts: rules and mutes take `VHOST/QUEUE` globs (a bare QUEUE is the
default vhost's, as in DLQ_QUEUES), and every alert names a queue's vhost unless it is `/`."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from dlq.alerts import delivery, engine, mutes, patterns
from dlq.models import AlertRule, Message, Mute
from tests.alertfactory import add_channel, arrive, sent_to
from tests.factories import client_for, make_user, post

pytestmark = pytest.mark.django_db


def run(now):
    return [delivery.deliver_now(attempt_id) for attempt_id in engine.evaluate(now)]


def rule_for(queues: str) -> AlertRule:
    """Only this rule alerts (the out-of-the-box one is switched off)."""
    engine.reset_horizon()
    AlertRule.objects.update(enabled=False)
    return engine.create_rule(f"rule {queues}", queues=queues, all_channels=True)


def webhook_queues(endpoint) -> list[dict]:
    return [q for r in sent_to(endpoint, "webhook") for q in r.json()["queues"]]


@pytest.mark.parametrize(
    ("pattern", "vhost", "queue", "expected"),
    [
        ("orders.dlq", "/", "orders.dlq", True),  # bare: the default vhost
        ("orders.dlq", "billing", "orders.dlq", False),
        ("*", "billing", "orders.dlq", False),
        ("billing/*.dlq", "billing", "orders.dlq", True),
        ("billing/*.dlq", "/", "orders.dlq", False),
        ("*/*", "a/b", "x", True),
        ("a%2Fb/*", "a/b", "orders.dlq", True),
        ("a%2fb/*", "a/b", "orders.dlq", True),
        ("a/b/*", "a", "b/orders.dlq", True),  # the first raw slash ends the vhost
        ("%2F/orders.dlq", "/", "orders.dlq", True),
        ("bill*/orders.*", "billing", "orders.dlq", True),
        ("/orders.dlq", "/", "orders.dlq", False),  # junk takes nothing
        ("%zz/orders.dlq", "/", "orders.dlq", False),
    ],
)
def test_a_pattern_names_a_vhost_and_a_queue(pattern, vhost, queue, expected):
    assert patterns.matches([pattern], vhost, queue) is expected


def test_a_bare_pattern_means_the_vhost_of_the_broker_url(settings):
    settings.DLQ_BROKER_URL = "amqp://guest:guest@localhost:5672/billing"
    assert patterns.matches(["orders.dlq"], "billing", "orders.dlq")
    assert not patterns.matches(["orders.dlq"], "/", "orders.dlq")


@pytest.mark.parametrize("junk", ["/orders.dlq", "billing/", " / ", "%zz/q", "a%2/q", "50%/q"])
def test_junk_patterns_get_a_clear_error(junk):
    [problem] = patterns.pattern_errors([junk])
    assert repr(junk) in problem and "%2F" in problem


def test_the_default_rule_covers_every_vhost(default_rule, endpoint):
    assert default_rule.queues == "*/*"
    add_channel("webhook", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    arrive("orders.dlq", 2, at=t0)
    arrive("orders.dlq", 3, vhost="billing", at=t0)
    run(t0)
    assert sorted((q["vhost"], q["queue"], q["count"]) for q in webhook_queues(endpoint)) == [
        ("/", "orders.dlq", 2),
        ("billing", "orders.dlq", 3),
    ]


def test_a_rule_counts_only_its_vhosts_queues(endpoint):
    rule_for("billing/*.dlq, a%2Fb/*")
    add_channel("webhook", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    arrive("orders.dlq", 1, at=t0)
    arrive("orders.dlq", 2, vhost="billing", at=t0)
    arrive("orders.dlq", 4, vhost="a/b", at=t0)
    arrive("orders.dlq", 8, vhost="other", at=t0)
    run(t0)
    [body] = [r.json() for r in sent_to(endpoint, "webhook")]
    assert body["count"] == 6
    by_name = {(q["vhost"], q["queue"]): q for q in body["queues"]}
    assert sorted(by_name) == [("a/b", "orders.dlq"), ("billing", "orders.dlq")]
    url = by_name[("a/b", "orders.dlq")]["url"]
    assert url == "https://console.example/messages?queue=orders.dlq&vhost=a%2Fb"
    assert {g["vhost"] for g in body["groups"]} == {"billing", "a/b"}


def test_a_failure_group_is_one_vhosts(endpoint):
    rule_for("*/*")
    add_channel("webhook", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    arrive("orders.dlq", 1, exception="KeyError", at=t0)
    arrive("orders.dlq", 1, exception="KeyError", vhost="billing", at=t0)
    run(t0)
    [body] = [r.json() for r in sent_to(endpoint, "webhook")]
    assert sorted(g["vhost"] for g in body["groups"]) == ["/", "billing"]
    assert len({g["group"] for g in body["groups"]}) == 2


def test_a_mute_takes_a_vhost_glob(endpoint):
    rule_for("*/*")
    add_channel("webhook", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    mutes.mute(until=t0 + timedelta(hours=2), queue="bill*/*", reason="billing deploy")
    mutes.mute(until=t0 + timedelta(hours=2), queue="audit.dlq", reason="noisy")
    arrive("orders.dlq", 2, vhost="billing", at=t0)
    arrive("audit.dlq", 3, at=t0)  # muted: bare is the default vhost
    arrive("audit.dlq", 4, vhost="shop", at=t0)  # not muted
    arrive("orders.dlq", 5, at=t0)
    run(t0)
    assert sorted((q["vhost"], q["queue"]) for q in webhook_queues(endpoint)) == [
        ("/", "orders.dlq"),
        ("shop", "audit.dlq"),
    ]


def test_a_group_mute_in_a_vhost_leaves_the_same_queue_elsewhere_alone(endpoint):
    rule_for("*/*")
    add_channel("webhook", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    [first] = arrive("orders.dlq", 1, exception="E", vhost="billing", at=t0)
    group = Message.objects.get(pk=first).group
    until = t0 + timedelta(hours=2)
    mutes.mute(until=until, queue="billing/orders.dlq", group=group, reason="known")
    arrive("orders.dlq", 2, exception="E", vhost="billing", at=t0)
    arrive("orders.dlq", 3, exception="E", vhost="shop", at=t0)
    run(t0)
    assert [(q["vhost"], q["count"]) for q in webhook_queues(endpoint)] == [("shop", 3)]


def test_a_junk_pattern_saved_earlier_mutes_nothing(endpoint):
    rule_for("*/*")
    add_channel("webhook", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    Mute.objects.create(queue="%zz/*", until=t0 + timedelta(hours=2), reason="old")
    arrive("orders.dlq", 2, at=t0)
    run(t0)
    assert [(q["queue"], q["count"]) for q in webhook_queues(endpoint)] == [("orders.dlq", 2)]


def test_a_junk_pattern_is_logged_once_not_at_every_evaluation(caplog):
    junk = f"%z{timezone.now().timestamp()}/*"  # one this process has not met yet
    for _ in range(3):
        assert patterns.patterns_of([junk, "orders.*"])[0].queue == "orders.*"
    assert caplog.text.count("alert pattern ignored") == 1


def test_alert_texts_name_the_vhost_unless_it_is_the_root(endpoint):
    rule_for("*/*")
    for kind in ("slack", "telegram"):
        add_channel(kind, endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    arrive("orders.dlq", 1, vhost="/", died_in="orders", at=t0)
    arrive("billing.dlq", 1, vhost="billing", died_in="billing", at=t0)
    arrive("slash.dlq", 1, vhost="a/b", died_in="slash", at=t0)
    run(t0)
    [telegram] = sent_to(endpoint, "telegram")
    text = telegram.json()["text"]
    assert "<code>billing/billing.dlq</code>" in text
    assert "<code>a%2Fb/slash.dlq</code>" in text
    assert "<code>a%2Fb/slash</code>" in text  # died in, in the same vhost
    assert "<code>orders.dlq</code>" in text and "%2F/orders.dlq" not in text
    [slack] = sent_to(endpoint, "slack")
    assert "`billing/billing.dlq`" in json.dumps(slack.json())


def test_a_hostile_vhost_is_escaped_in_alert_texts(endpoint):
    rule_for("*/*")
    add_channel("telegram", endpoint)
    t0 = timezone.now() - timedelta(hours=1)
    arrive("q.dlq", 1, vhost="<b>x</b>&", died_in="q", at=t0)
    run(t0)
    [telegram] = sent_to(endpoint, "telegram")
    text = telegram.json()["text"]
    assert "<b>x</b>&" not in text and "&lt;b&gt;x&lt;%2Fb&gt;&amp;/q.dlq" in text


@pytest.fixture
def admin():
    return client_for(make_user("admin"))


def rule_form(**fields) -> dict:
    return {"name": "vhosts", "enabled": "on", "queues": "*/*", "threshold": 1,
            "window_minutes": 5, "digest_minutes": 15, "quiet_tz": "UTC", **fields}  # fmt: skip


def test_the_rule_form_refuses_junk_patterns_clearly(admin):
    refused = post(admin, "/alerts/rules/add/", rule_form(queues="orders.dlq, billing/, %zz/q"))
    assert refused.status_code == 400
    page = refused.content.decode()
    assert "&#x27;billing/&#x27; has an empty part" in page
    assert "a % must start an escape such as %2F" in page
    assert not AlertRule.objects.filter(name="vhosts").exists()

    saved = post(admin, "/alerts/rules/add/", rule_form(queues="billing/*.dlq, a%2Fb/*"))
    assert saved.status_code == 302
    assert AlertRule.objects.get(name="vhosts").patterns == ["billing/*.dlq", "a%2Fb/*"]


def test_the_mute_form_refuses_junk_patterns_clearly(admin):
    until = (timezone.now() + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M")
    refused = post(admin, "/alerts/mutes/add/", {"queue": "/x", "until": until, "reason": "r"})
    assert refused.status_code == 400 and "has an empty part" in refused.content.decode()
    assert not Mute.objects.exists()
    saved = post(admin, "/alerts/mutes/add/", {"queue": "a%2Fb/*", "until": until, "reason": "r"})
    assert saved.status_code == 302 and Mute.objects.get().queue == "a%2Fb/*"
