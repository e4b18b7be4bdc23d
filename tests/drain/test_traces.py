"""A dead-lettered message's trace: read from its tracing headers as the drainer stores it,
and found again through the list's trace_id filter."""

import pytest

from dlq.models import Message
from tests.conftest import drain_once, publish
from tests.factories import client_for, make_user
from tests.topology import reject

pytestmark = pytest.mark.django_db(transaction=True)
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


def test_a_drained_message_keeps_the_trace_its_headers_name(channel, top, settings):
    settings.DLQ_TRACE_URL = "https://tempo.example/explore?traceId={trace_id}"
    dlq, dlx = top.parking()
    work = top.queue("work", **{"x-dead-letter-exchange": dlx})
    publish(channel, "", work, b"w3c", {"Traceparent": f"00-{TRACE}-00f067aa0ba902b7-01"})
    publish(channel, "", work, b"jaeger", {"uber-trace-id": b"ABC:1:0:1"})  # bytes, upper case
    publish(channel, "", work, b"zeros", {"traceparent": f"00-{'0' * 32}-00f067aa0ba902b7-01"})
    publish(channel, "", work, b"none", {"x-b3-traceid": 7})
    for _ in range(4):
        reject(channel, work)

    drain_once([dlq])

    stored = {bytes(m.body): m.trace_id for m in Message.objects.filter(queue=dlq)}
    assert stored == {b"w3c": TRACE, b"jaeger": "0000000000000abc", b"zeros": "", b"none": ""}
    client = client_for(make_user("viewer"), token=True)
    found = client.get("/api/v1/messages", {"trace_id": TRACE.upper()}).json()["results"]
    assert [(m["trace_id"], m["trace_url"]) for m in found] == [
        (TRACE, f"https://tempo.example/explore?traceId={TRACE}")
    ]
