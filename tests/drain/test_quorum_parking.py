"""A quorum parking queue stamps its own x-delivery-count on every delivery to the drainer."""

import uuid

import pytest

from dlq.broker import amqp
from dlq.drain import store
from dlq.messages.ingest import Delivery, build_row
from tests.conftest import drain_once, publish
from tests.topology import get, reject, stored, wait_depth

pytestmark = pytest.mark.django_db(transaction=True)


def _quorum_parking(top):
    dlx = top.exchange("dlq-x", "fanout")
    park = top.queue("dlq", durable=True, **{"x-queue-type": "quorum"})
    top.ch.queue_bind(park, dlx)
    return park, dlx


def test_it_reads_retry_counters_not_its_own_redeliveries(channel, top):
    park, dlx = _quorum_parking(top)
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    sends = {
        "counted": {"retry-count": 2},
        "uncounted": {},
        "client-count": {"x-delivery-count": {"type": "int64", "value": 5}},
    }
    for message_id, headers in sends.items():
        publish(channel, "", work, b"job", headers, message_id=message_id)
        reject(channel, work)
    wait_depth(channel, park, len(sends))
    for _ in range(2 * len(sends)):  # earlier drain attempts that never acked
        method, _, _ = get(channel, park)
        channel.basic_nack(method.delivery_tag, requeue=True)

    drain_once([park])

    rows = {m.message_id: m for m in stored(park, len(sends))}
    assert rows["counted"].delivery_count == 2
    assert rows["uncounted"].delivery_count is None
    assert rows["client-count"].delivery_count is None  # the queue overwrote it
    # The parking queue's own counts stay in the headers (4.x sets none on a first delivery).
    counts = [m.headers.get("x-delivery-count") for m in rows.values()]
    counts = [c for c in counts if c is not None]
    assert all(c["type"] == "int64" for c in counts)
    assert sum(c["value"] for c in counts) >= 2 * len(sends)


@pytest.mark.parametrize("quorum", [True, False], ids=["quorum", "classic"])
def test_it_recognises_a_redelivery_after_a_crash_between_commit_and_ack(
    rabbit, channel, top, quorum
):
    if quorum:
        park, dlx = _quorum_parking(top)
    else:
        park, dlx = top.parking()
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    publish(channel, "", work, b"stored once", {"retry-count": 1})
    reject(channel, work)
    wait_depth(channel, park, 1)
    # Another drainer takes the message, commits its batch, and dies before the ack.
    crashed = amqp.connect(rabbit.url, "dlq-tests-crashed-drainer")
    method, props, body = get(crashed.channel(), park)
    delivery = Delivery(park, "/", method.exchange, method.routing_key, False, props, body, quorum)
    row = build_row(delivery)
    row["_redelivered"] = False
    assert store.store_batch(uuid.uuid4().hex, "crashed drainer", [row]) == 1
    crashed.close()

    drain_once([park])

    (m,) = stored(park, 1)  # the redelivered copy matched the pending batch: no twin row
    assert bytes(m.body) == b"stored once"
    assert m.delivery_count == 1
