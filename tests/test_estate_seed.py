"""The delayed-retry design this product grew from, end to end, in a service's own vhost.

Service A's vhost holds a fanout input exchange, its work queue dead-lettering into a retry
exchange, a retry queue whose TTL dead-letters back into the input exchange, and a parking
queue. Its consumer rejects a message until x-death says it has failed LIMIT times, then
parks it. The console drains the parking queue, alerts on Telegram naming the vhost and the
queue, and after the fix a replay reaches the consumer once, in that vhost.
"""

import threading
from datetime import timedelta

import pytest
from django.utils import timezone

from dlq.alerts import delivery, engine
from dlq.broker import codec
from dlq.drain.estate import Estate
from dlq.models import Message, Status
from tests.alertfactory import add_channel, sent_to
from tests.factories import client_for, make_user
from tests.topology import wait_depth

pytestmark = pytest.mark.django_db(transaction=True)
LIMIT = 3


class Service:
    """Service A: its topology in its vhost, and a consumer that fails until fixed."""

    def __init__(self, vhosts, vhost: str):
        self.ch = vhosts.channel(vhost)
        self.consumer_ch = vhosts.channel(vhost)
        ch = self.ch
        ch.exchange_declare("svc.in", "fanout", durable=True)
        ch.exchange_declare("svc.retry-x", "fanout", durable=True)
        retry = {"x-dead-letter-exchange": "svc.retry-x"}
        ch.queue_declare("svc.work", durable=True, arguments=retry)
        ch.queue_bind("svc.work", "svc.in")
        back = {"x-message-ttl": 50, "x-dead-letter-exchange": "svc.in"}
        ch.queue_declare("svc.retry", durable=True, arguments=back)
        ch.queue_bind("svc.retry", "svc.retry-x")
        ch.queue_declare("svc.parking", durable=True)
        self.fixed = False
        self.processed: list[bytes] = []
        self.parked = threading.Event()

    def on_message(self, ch, method, props, body):
        if self.fixed:
            self.processed.append(body)
            ch.basic_ack(method.delivery_tag)
            return
        if _failures(props.headers or {}) + 1 < LIMIT:
            ch.basic_reject(method.delivery_tag, requeue=False)  # to the retry queue
            return
        ch.basic_publish("", "svc.parking", body, props)  # give up: park it
        ch.basic_ack(method.delivery_tag)
        self.parked.set()

    def consume_until(self, done: threading.Event, timeout: float = 30) -> None:
        tag = self.consumer_ch.basic_consume("svc.work", self.on_message)
        deadline = timezone.now() + timedelta(seconds=timeout)
        while not done.is_set() and timezone.now() < deadline:
            self.consumer_ch.connection.process_data_events(time_limit=0.05)
        self.consumer_ch.basic_cancel(tag)
        assert done.is_set(), "the service's consumer never got there"


def _failures(headers: dict) -> int:
    deaths = codec.plain(headers.get("x-death")) or []
    return sum(d.get("count", 0) for d in deaths if d.get("queue") == "svc.work")


def test_a_parked_message_is_alerted_and_replayed_in_its_own_vhost(vhosts, endpoint, default_rule):
    vhost = vhosts.make("service_a_vh")
    service = Service(vhosts, vhost)
    service.ch.basic_publish("svc.in", "invoice.created", b'{"invoice": 7}')
    service.consume_until(service.parked)
    wait_depth(service.ch, "svc.parking", 1)

    # Drained by a console whose default vhost is another one, by a VHOST/QUEUE pattern.
    assert Estate(patterns=[f"{vhost}/svc.parking"], once=True).run() == 0
    [message] = Message.objects.filter(queue="svc.parking")
    assert (message.vhost, message.failed_queue, message.death_reason) == (
        vhost, "svc.work", "rejected",
    )  # fmt: skip
    assert message.original_exchange == "svc.in"

    # One Telegram digest that names the vhost and the queue.
    add_channel("telegram", endpoint)
    for attempt_id in engine.evaluate(timezone.now() + timedelta(seconds=1)):
        delivery.deliver_now(attempt_id)
    [telegram] = sent_to(endpoint, "telegram")
    assert f"{vhost}/svc.parking" in telegram.json()["text"]

    # The fix is deployed; the operator replays to where it came from, in its vhost.
    service.fixed = True
    client = client_for(make_user("operator"), token=True)
    answer = client.post(
        f"/api/v1/messages/{message.pk}/replay",
        {"target": "original", "reason": "fixed in 1.2.3"},
        content_type="application/json",
    ).json()
    assert answer["outcome"] == "confirmed", answer
    _wait_processed(service)
    assert service.processed == [b'{"invoice": 7}']  # once, by service A's consumer
    message.refresh_from_db()
    assert message.status == Status.REPLAYED
    assert service.ch.queue_declare("svc.parking", passive=True).method.message_count == 0


def _wait_processed(service: Service, timeout: float = 15) -> None:
    done = threading.Event()
    tag = service.consumer_ch.basic_consume(
        "svc.work", lambda *a: (service.on_message(*a), done.set())
    )
    deadline = timezone.now() + timedelta(seconds=timeout)
    while not done.is_set() and timezone.now() < deadline:
        service.consumer_ch.connection.process_data_events(time_limit=0.05)
    # A second delivery would be a duplicate: give it a moment to show up.
    service.consumer_ch.connection.process_data_events(time_limit=0.5)
    service.consumer_ch.basic_cancel(tag)
