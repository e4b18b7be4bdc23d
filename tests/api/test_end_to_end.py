import pytest

from tests.conftest import drain_once, publish
from tests.factories import client_for, make_user
from tests.topology import reject

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_reads_back_a_drained_message_through_the_api(channel, top):
    dlq, dlx = top.parking()
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    headers = {"tenant": "acme", "attempt": {"type": "int8", "value": 3}}
    publish(channel, "", work, b'{"order": 42}', headers, content_type="application/json")
    reject(channel, work)

    drain_once([dlq])

    client = client_for(make_user("viewer"), token=True)
    listed = client.get("/api/v1/messages", {"queue": dlq, "q": "order"}).json()["results"]
    assert len(listed) == 1
    body = client.get(f"/api/v1/messages/{listed[0]['id']}").json()
    assert body["body_text"] == '{"order": 42}'
    assert body["death_reason"] == "rejected"
    assert body["failed_queue"] == work
    assert (body["original_exchange"], body["original_routing_keys"]) == ("", [work])
    assert body["properties"] == {"content_type": "application/json"}
    assert body["headers"]["tenant"] == {"type": "longstr", "value": "acme"}
    assert body["headers"]["attempt"] == {"type": "int8", "value": 3}
    assert body["headers"]["x-death"]["type"] == "array"
    [death] = body["x_death"]
    assert (death["queue"], death["reason"], death["count"]) == (work, "rejected", 1)
    assert death["exchange"] == "" and death["routing_keys"] == [work]
    assert body["history"][0]["event"] == "arrived"
    assert body["history"][0]["message"] == body["id"]
    queues = {q["name"]: q for q in client.get("/api/v1/queues").json()["results"]}
    assert queues[dlq]["parked"] == 1
