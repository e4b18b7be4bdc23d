import json

import pytest

from dlq.models import Message
from tests.conftest import drain_once, publish
from tests.topology import reject

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_stores_a_rejected_message_with_its_death(channel, top):
    dlq, dlx = top.parking()
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    publish(channel, "", work, b'{"order": 1}', {"price": 1.75}, content_type="application/json")
    reject(channel, work)

    drain_once([dlq])

    m = Message.objects.get(queue=dlq)
    assert bytes(m.body) == b'{"order": 1}'
    assert m.status == "parked"
    assert m.death_reason == "rejected"
    assert m.failed_queue == work
    assert m.original_exchange == ""
    assert m.original_routing_keys == [work]
    assert m.death_count == 1
    assert m.headers["price"] == {"type": "double", "value": 1.75}
    assert json.loads(m.properties_json)["content_type"] == "application/json"
