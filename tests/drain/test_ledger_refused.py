"""A ledger the broker refuses (in a cluster: its home node is down) does not stop the vhost.

A classic queue lives on one node; with that node lost the broker refuses to declare it.
The test makes the broker refuse the drainer's ledger another way, with a queue of that name
declared with other arguments (PRECONDITION_FAILED closes the channel the same way)."""

import logging
import uuid

import pytest

from dlq.drain.drainer import Drainer
from dlq.drain.ledger import LEDGER_PREFIX
from tests.conftest import publish
from tests.topology import stored

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_refused_ledger_is_replaced_and_the_queue_still_drains(channel, top, caplog):
    dlq = top.queue("dlq", durable=True)
    for i in range(30):
        publish(channel, "", dlq, f"m{i}".encode())
    drainer = Drainer(patterns=[dlq], once=True)
    refused = drainer.ledger.name = f"{LEDGER_PREFIX}{uuid.uuid4().hex}"
    channel.queue_declare(refused, arguments={"x-max-length": 5})  # not the ledger's
    top.cleanup["queues"].append(refused)

    with caplog.at_level(logging.WARNING, logger="dlq.drain"):
        assert drainer.run() == 0

    assert sorted(bytes(m.body) for m in stored(dlq, 30)) == sorted(
        f"m{i}".encode() for i in range(30)
    )
    assert drainer.ledger.name != refused
    assert any("ack ledger is unusable" in r.getMessage() for r in caplog.records)
    # Nothing of the drainer's went into the refused queue.
    assert channel.queue_declare(refused, passive=True).method.message_count == 0
