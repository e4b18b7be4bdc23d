"""Where a replay goes: `original` re-routes to every bound queue, `failed_queue` to one; the
route preview reads the same from the broker's bindings before anything is sent."""

import pytest

from dlq.actions import message as message_actions
from dlq.actions import replay, routes
from dlq.jobs import control, running
from dlq.models.actions import Job, Outcome, ReplayOverride
from tests.conftest import drain_once, publish
from tests.factories import make_message, make_messages
from tests.topology import depth, reject, stored, wait_depth

pytestmark = pytest.mark.django_db(transaction=True)


def _preview(message, target):
    return routes.preview(message.vhost, replay.resolve(message, target), {})


def test_it_replays_to_every_queue_of_a_fanout_for_original_and_to_one_for_failed_queue(
    channel, top
):
    park, dlx = top.parking()
    fan = top.exchange("fan", "fanout")
    billing = top.queue("billing", **{"x-dead-letter-exchange": dlx})
    audit_q = top.queue("audit")
    channel.queue_bind(billing, fan)
    channel.queue_bind(audit_q, fan)
    for i in range(2):
        publish(channel, fan, "any", f"invoice {i}".encode(), message_id=f"i-{i}")
    reject(channel, billing)
    reject(channel, billing)
    channel.queue_purge(audit_q)  # the audit consumer handled its copies
    drain_once([park])
    first, second = stored(park, 2)

    preview = _preview(first, "original")
    assert (preview["exchange"], preview["routing_key"]) == (fan, "any")
    assert preview["queues"] == sorted([billing, audit_q])
    assert "2 queues would each get a copy" in preview["warning"]
    preview = _preview(first, "failed_queue")
    assert (preview["exchange"], preview["routing_key"]) == ("", billing)
    assert (preview["queues"], preview["warning"]) == ([billing], None)

    assert (
        message_actions.replay_one(first.pk, "original", "bob", "both").outcome == Outcome.CONFIRMED
    )
    assert (
        message_actions.replay_one(second.pk, "failed_queue", "bob", "one").outcome == "confirmed"
    )

    wait_depth(channel, billing, 2)
    assert depth(channel, billing) == 2
    assert depth(channel, audit_q) == 1
    _, props, body = channel.basic_get(audit_q, auto_ack=True)
    assert (body, props.message_id) == (b"invoice 0", "i-0")


def test_it_previews_topic_bindings_and_exchange_to_exchange_bindings(channel, top):
    topic = top.exchange("events", "topic")
    inner = top.exchange("inner", "fanout")
    one_word = top.queue("one-word")
    created = top.queue("created")
    invoices = top.queue("invoices")
    behind = top.queue("behind")
    channel.queue_bind(one_word, topic, "order.*")
    channel.queue_bind(created, topic, "#.created")
    channel.queue_bind(invoices, topic, "invoice.#")
    channel.exchange_bind(inner, topic, "order.#")
    channel.queue_bind(behind, inner)
    m = make_message(queue=top.name("dlq"), exchange=topic, routing_key="order.created")

    preview = _preview(m, "original")
    assert preview["queues"] == sorted([one_word, created, behind])
    assert "3 queues" in preview["warning"]

    custom = {"exchange": topic, "routing_key": "invoice.paid.late"}
    assert _preview(m, custom)["queues"] == [invoices]
    assert _preview(m, custom)["warning"] is None
    custom = {"exchange": topic, "routing_key": "order.created.late"}
    assert _preview(m, custom)["queues"] == [behind]
    nowhere = _preview(m, {"exchange": topic, "routing_key": "refund"})
    assert nowhere["queues"] == []
    assert "unroutable" in nowhere["warning"]

    # What the preview says is what the broker does.
    assert message_actions.replay_one(m.pk, "original", "bob", "check").outcome == Outcome.CONFIRMED
    for queue in (one_word, created, behind):
        wait_depth(channel, queue, 1)
    assert depth(channel, invoices) == 0


TOPIC_CASES = [
    ("#", "", True),
    ("#", "a.b.c", True),
    ("a.#", "a", True),
    ("a.#", "a.b.c", True),
    ("*.b", "b", False),
    ("*.b", "a.b", True),
    ("a.*.c", "a.b.c", True),
    ("a.*.c", "a.c", False),
    ("#.c", "c", True),
    ("a.#.c", "a.x.y.c", True),
    ("a.#.c", "a.x.y.d", False),
    ("a", "a.b", False),
]


def test_it_matches_topic_patterns_like_the_broker():
    for pattern, key, matches in TOPIC_CASES:
        assert routes.topic_matches(pattern, key) is matches, (pattern, key)


def test_it_warns_that_an_internal_exchange_cannot_be_published_to(channel, top):
    inner = top.exchange("internal", "fanout", internal=True)
    channel.queue_bind(top.queue("behind"), inner)
    m = make_message(queue=top.name("dlq"), exchange=inner)

    preview = _preview(m, "original")
    assert "internal" in preview["warning"]
    assert preview["queues"] == [top.name("behind")]
    result = message_actions.replay_one(m.pk, "original", "bob", "try")
    assert (result.outcome, "403" in result.detail) == (Outcome.ERROR, True)


def test_it_warns_about_a_missing_exchange_and_a_missing_queue(top):
    m = make_message(queue=top.name("dlq"), exchange=top.name("gone"), died_in=top.name("gone-q"))

    preview = _preview(m, "original")
    assert preview["queues"] == []
    assert "does not exist" in preview["warning"]
    preview = _preview(m, "failed_queue")
    assert preview["queues"] == []
    assert "unroutable" in preview["warning"]


def test_it_previews_a_headers_exchange(channel, top):
    headers_x = top.exchange("by-headers", "headers")
    eu = top.queue("eu")
    any_q = top.queue("any")
    channel.queue_bind(eu, headers_x, arguments={"x-match": "all", "region": "eu", "tier": "gold"})
    channel.queue_bind(any_q, headers_x, arguments={"x-match": "any", "region": "eu", "x": "y"})
    m = make_message(queue=top.name("dlq"), exchange=headers_x)
    route = replay.Route("custom", headers_x, "")

    assert routes.preview("/", route, {"region": "eu", "tier": "gold"})["queues"] == sorted(
        [eu, any_q]
    )
    assert routes.preview("/", route, {"region": "eu"})["queues"] == [any_q]
    assert routes.preview("/", route, {"region": "us"})["queues"] == []
    assert m.pk


def test_it_follows_a_per_queue_override_of_the_original_destination(channel, top):
    """A retry framework's delay exchange was the first death; the override names the real
    destination, for single replays and for jobs alike."""
    work = top.queue("work")
    delays = top.exchange("delays")
    ReplayOverride.objects.create(queue_pattern=top.name("*.dlq"), exchange="", routing_key=work)
    park = top.name("orders.dlq")
    single, *bulk = make_messages(3, queue=park, exchange=delays, routing_key="delay_5000")
    other = make_message(queue=top.name("other"), exchange=delays, routing_key="delay_5000")

    assert _preview(single, "original")["queues"] == [work]
    assert (
        message_actions.replay_one(single.pk, "original", "bob", "via override").outcome
        == "confirmed"
    )
    job = control.create_job("bob", "replay", ids=[m.pk for m in bulk], reason="bulk override")
    assert running.run_job(job.pk) == "done"
    wait_depth(channel, work, 3)
    assert Job.objects.get(pk=job.pk).outcomes == {"confirmed": 2}
    # A queue the pattern does not match keeps its recorded destination.
    assert _preview(other, "original")["exchange"] == delays
