"""Topology health: real queues on the real broker, and the page that lists the warnings."""

import urllib.parse
import urllib.request

import pytest
from django.test import Client
from django.utils import timezone

from dlq.broker import amqp, names
from dlq.health import topology
from dlq.models import DrainedQueue
from tests.conftest import publish
from tests.drainproc import free_port, management, wait_for
from tests.factories import client_for, make_user
from tests.topology import Topology, get

pytestmark = pytest.mark.django_db


@pytest.fixture
def top(channel, cleanup_queues, unique):
    return Topology(channel, cleanup_queues, unique)


def findings(unique: str) -> dict[str, list[topology.Finding]]:
    """This test's findings by queue (the management API's counts lag a few seconds)."""
    found = topology.check(drained=[f"{unique}.*.dlq"], work=[f"{unique}.*"])
    by_queue: dict[str, list] = {}
    for f in found:
        if f.queue.startswith(unique):
            by_queue.setdefault(f.queue, []).append(f)
    return by_queue


def test_it_warns_of_a_drained_queue_near_its_length_limit(channel, top, unique):
    full = top.queue("full.dlq", **{"x-max-length": 10})
    roomy = top.queue("roomy.dlq", **{"x-max-length": 100})
    refusing = top.queue("refusing.dlq", **{"x-max-length": 5, "x-overflow": "reject-publish"})
    for queue, n in ((full, 9), (roomy, 9), (refusing, 5)):
        for i in range(n):
            publish(channel, "", queue, f"m{i}".encode())

    found = wait_for(lambda: (f := findings(unique)).get(full) and f.get(refusing) and f, 30,
                     "the management API to count the messages")  # fmt: skip
    [near] = found[full]
    assert near.check == "near_full"
    assert "holds 9 of at most 10 messages (90%)" in near.reason
    assert "drops the oldest messages" in near.reason
    assert "refuses new messages" in found[refusing][0].reason
    assert roomy not in found


def test_it_reads_the_length_limit_from_a_policy(channel, top, unique):
    queue = top.queue("pol.dlq")
    name = urllib.parse.quote(f"{unique}-limit", safe="")
    body = {"pattern": f"^{unique}\\.pol\\.dlq$", "apply-to": "queues",
            "definition": {"max-length": 4}, "priority": 100}  # fmt: skip
    _policy("PUT", name, body)
    try:
        for i in range(4):
            publish(channel, "", queue, f"m{i}".encode())
        found = wait_for(lambda: findings(unique).get(queue), 30, "the policy to apply")
        assert "holds 4 of at most 4 messages (100%)" in found[0].reason
    finally:
        _policy("DELETE", name)


def _policy(method: str, name: str, body: dict | None = None) -> None:
    """Set or delete a policy through the management API."""
    management(method, f"/api/policies/%2F/{name}", body)


def test_it_warns_of_work_queues_without_a_dead_letter_exchange(top, unique):
    bare = top.queue("orders")
    guarded = top.queue("payments", **{"x-dead-letter-exchange": "payments.dlx"})
    default_exchange = top.queue("emails", **{"x-dead-letter-exchange": ""})
    found = findings(unique)
    [warning] = found[bare]
    assert warning.check == "no_dlx"
    assert "reject" in warning.reason and "dropped" in warning.reason
    assert guarded not in found and default_exchange not in found


def test_it_warns_of_a_quorum_queue_with_a_delivery_limit_and_no_dlx(top, unique):
    quorum = {"x-queue-type": "quorum", "x-delivery-limit": 3}
    limited = top.queue("invoices", durable=True, **quorum)
    safe = top.queue("refunds", durable=True, **quorum, **{"x-dead-letter-exchange": "r.dlx"})
    found = findings(unique)
    [warning] = found[limited]
    assert warning.check == "delivery_limit"
    assert "delivery limit of 3" in warning.reason and "dropped" in warning.reason
    assert safe not in found


def test_it_warns_of_each_versions_delivery_limit_rules(rabbit, channel, top, unique):
    """Quorum queues with no DLX. No limit: 3.x redelivers forever, 4.x drops a message after
    20 redeliveries. A limit of -1: 3.x drops a message after its first delivery, 4.x has no
    limit. The warnings must say what the broker will do, and the broker must do it."""
    quorum = {"x-queue-type": "quorum"}
    bare = top.queue("ledger", durable=True, **quorum)
    negative = top.queue("audit", durable=True, **quorum, **{"x-delivery-limit": -1})
    found = findings(unique)
    lossy, safe, deliveries = (bare, negative, 21) if rabbit.v4 else (negative, bare, 1)
    [warning] = found[lossy]
    assert warning.check == "delivery_limit" and "dropped" in warning.reason
    if rabbit.v4:
        assert "default delivery limit of 20" in warning.reason
        assert "fails 21 deliveries" in warning.reason
    else:
        assert "delivery limit of 0" in warning.reason and "its first delivery" in warning.reason
    assert [f.check for f in found[safe]] == ["no_dlx"]  # a work queue all the same

    for queue in (lossy, safe):
        publish(channel, "", queue, b"keeps failing")
        for _ in range(deliveries):
            method, _, _ = get(channel, queue)
            channel.basic_nack(method.delivery_tag, requeue=True)
    assert channel.basic_get(lossy) == (None, None, None)  # dropped, as the warning said
    assert get(channel, safe)[2] == b"keeps failing"


def test_it_leaves_out_what_is_fine_by_design_and_counts_it(settings, rabbit, vhosts):
    """In a vhost of its own, so the counts are exact: parking queues (drained, known as
    drained, or where a dead-letter exchange leads), a framework endpoint with its drained
    _error queue, the console's Celery and ledger queues, private queues. What still warns:
    a work queue only a TTL retry queue leads to, an endpoint with no _error queue, and
    another application's Celery queue."""
    v = vhosts.make("design")
    ch = vhosts.channel(v)
    settings.CELERY_BROKER_URL = amqp.nodes(rabbit.url, vhost=v)[0]
    settings.CELERY_TASK_DEFAULT_QUEUE = "console-tasks"
    ch.exchange_declare("orders.dlx", "fanout")
    ch.exchange_declare("audit.x", "fanout")
    declare = {
        "orders": {"x-dead-letter-exchange": "orders.dlx"},
        "orders.dlq": None,  # drained, by the pattern
        "audit": {"x-dead-letter-exchange": "audit.x"},
        "audit.held": None,  # nobody drains it, but audit's dead letters end there
        "old.parked": None,  # drained once (the patterns changed since)
        "pay": None,  # a work queue, although its retry queue dead-letters into it
        "pay.retry": {"x-message-ttl": 100, "x-dead-letter-exchange": "",
                      "x-dead-letter-routing-key": "pay"},
        "invoices": None,  # MassTransit moves failures to invoices_error itself
        "invoices_error": None,
        "notifications": None,  # no _error queue: nothing catches what it drops
        "console-tasks": None,  # the console's Celery queue...
        "w1@host.celery.pidbox": None,
        "celeryev.5d1f": None,
        "dlq-drain-acks.0a1b": None,  # ...and a drainer's ledger
        "celery": None,  # another application's Celery queue
    }  # fmt: skip
    for name, arguments in declare.items():
        ch.queue_declare(name, arguments=arguments)
    ch.queue_bind("orders.dlq", "orders.dlx")
    ch.queue_bind("audit.held", "audit.x")
    ch.queue_declare("", exclusive=True)  # a consumer's own, server-named
    ch.queue_declare("reply-to", auto_delete=True)
    now = timezone.now()
    DrainedQueue.objects.create(vhost=v, name="old.parked", first_seen_at=now, last_seen_at=now)

    escaped = names.escape_vhost(v)
    found = topology.survey([v], drained=[f"{escaped}/*.dlq", f"{escaped}/*_error"], work=["*"])
    assert sorted((f.queue, f.check) for f in found.findings) == [
        ("celery", "no_dlx"), ("notifications", "no_dlx"), ("pay", "no_dlx")]  # fmt: skip
    assert found.left_out == {"parking": 4, "framework": 1, "console": 4, "private": 2}


def test_the_page_lists_the_warnings_for_viewers(top, unique):
    bare = top.queue("orders")
    response = client_for(make_user("viewer")).get("/topology/")
    assert response.status_code == 200
    page = response.content.decode()
    assert bare in page and "no dead-letter exchange" in page


def test_it_checks_every_drained_vhost_and_names_it(vhosts, top, unique):
    a = vhosts.make("a")
    vhosts.channel(a).queue_declare(f"{unique}.orders")  # no dead-letter exchange, in A
    top.queue("orders")  # its namesake in the default vhost
    now = timezone.now()
    DrainedQueue.objects.create(vhost=a, name=f"{unique}.x.dlq", first_seen_at=now,
                                last_seen_at=now)  # fmt: skip

    def mine(work):
        found = topology.check(drained=[f"{unique}.*.dlq"], work=work)
        return {(f.vhost, f.queue, f.check) for f in found if f.queue.startswith(unique)}

    orders = f"{unique}.orders"
    assert mine([f"{unique}.*"]) == {(a, orders, "no_dlx"), ("/", orders, "no_dlx")}
    assert mine([f"{a}/{unique}.*"]) == {(a, orders, "no_dlx")}  # a VHOST/QUEUE narrows it
    page = client_for(make_user("viewer")).get("/topology/").content.decode()
    assert f"<td>{a}</td>" in page


def test_the_page_needs_a_role():
    assert Client().get("/topology/").status_code == 302  # to the login page
    assert client_for(make_user(None)).get("/topology/").status_code == 403


def test_the_page_says_when_the_management_api_is_down(settings):
    settings.DLQ_MANAGEMENT_URL = f"http://guest:guest@127.0.0.1:{free_port()}"
    response = client_for(make_user("viewer")).get("/topology/")
    assert response.status_code == 200
    assert "Cannot check the topology" in response.content.decode()
