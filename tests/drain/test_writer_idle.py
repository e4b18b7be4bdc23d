"""The writer thread survives a failure on its idle path (a dead writer stalls the drainer)."""

import queue
import threading

import pytest

from dlq.drain.handoff import STOP
from dlq.drain.writer import Writer

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_failing_heartbeat_count_does_not_kill_the_writer():
    calls, alive = [], threading.Event()

    def queue_count() -> int:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("the queue list is being rebuilt")
        alive.set()  # asked again: the idle loop went on
        return 3

    work = queue.Queue()
    writer = Writer(work, "test-writer", set, queue_count)
    thread = threading.Thread(target=writer.loop, daemon=True)
    thread.start()
    try:
        assert alive.wait(5), "the writer died on the first failure"
        assert thread.is_alive()
    finally:
        work.put(STOP)
        thread.join(5)
    assert not thread.is_alive()
