"""Estate naming: `VHOST/QUEUE` patterns, qualified names, node URL lists."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from console.env import env_urls
from dlq.broker import amqp, names


@pytest.mark.parametrize(
    "item, vhost, queue",
    [
        ("orders.dlq", "svc", "orders.dlq"),  # bare: the default vhost
        ("billing/orders.dlq", "billing", "orders.dlq"),
        ("%2F/orders.dlq", "/", "orders.dlq"),
        ("a%2Fb/q", "a/b", "q"),
        ("*/*.dlq", "*", "*.dlq"),
        ("billing/odd/name", "billing", "odd/name"),  # the first raw slash ends the vhost
    ],
)
def test_patterns_name_a_vhost_and_a_queue(item, vhost, queue):
    assert names.parse(item, "svc") == names.QueuePattern(vhost, queue)


@pytest.mark.parametrize("item", ["/q", "vh/", " /q", "%zz/q", "a%2/q"])
def test_junk_patterns_are_refused(item):
    with pytest.raises(names.PatternError):
        names.parse(item, "/")


def test_globs_match_vhost_and_queue_apart():
    patterns = names.parse_all(["service_*/*.parking", "legacy.dlq"], "/")
    assert names.matches(patterns, "service_a", "orders.parking")
    assert not names.matches(patterns, "other", "orders.parking")
    assert names.matches(patterns, "/", "legacy.dlq")
    assert not names.matches(patterns, "service_a", "legacy.dlq")


def test_qualified_names_are_bare_in_the_root_vhost_only():
    assert names.qualified("/", "orders.dlq") == "orders.dlq"
    assert names.qualified("billing", "orders.dlq") == "billing/orders.dlq"
    assert names.qualified("a/b", "q") == "a%2Fb/q"
    # What qualified() prints parses back to the same vhost and queue.
    assert names.parse(names.qualified("a/b", "q"), "/") == names.QueuePattern("a/b", "q")


def test_node_urls_are_pointed_at_a_vhost_each():
    url = "amqp://u:p@n1:5672/%2F,amqp://u:p@n2:5672/%2F"
    assert amqp.nodes(url) == ["amqp://u:p@n1:5672/%2F", "amqp://u:p@n2:5672/%2F"]
    assert amqp.nodes(url, "a/b") == ["amqp://u:p@n1:5672/a%2Fb", "amqp://u:p@n2:5672/a%2Fb"]
    assert amqp.vhost_of(url) == "/"
    assert amqp.describe(url) == "n1:5672 vhost /,n2:5672 vhost /"


def test_node_url_lists_are_checked_at_start_up(monkeypatch):
    monkeypatch.setenv("DLQ_BROKER_URL", "amqp://u:secret@n1/%2F,,amqp://n2")
    with pytest.raises(ImproperlyConfigured, match="empty item") as raised:
        env_urls("DLQ_BROKER_URL", "amqp://x", ("amqp",))
    assert "secret" not in str(raised.value)
    monkeypatch.setenv("DLQ_BROKER_URL", "amqp://n1/%2F, http://n2")
    with pytest.raises(ImproperlyConfigured, match="scheme"):
        env_urls("DLQ_BROKER_URL", "amqp://x", ("amqp",))
