"""The console's own Celery queues are no topology warning: a real worker declares them."""

import pytest

from dlq.broker import amqp, mgmt
from dlq.health import topology
from tests.celeryworker import CELERY_TRANSPORT, Worker
from tests.drainproc import wait_for
from tests.rabbits import only_on

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@only_on("rabbitmq-3.10", "Celery's transport, shared by every test, is on this broker")
def test_what_the_worker_declares_is_left_out(settings, rabbit, top, unique):
    queue = top.celery_queue()
    settings.CELERY_BROKER_URL = CELERY_TRANSPORT
    settings.CELERY_TASK_DEFAULT_QUEUE = queue
    vhost = amqp.vhost_of(CELERY_TRANSPORT)
    conn = amqp.connect(CELERY_TRANSPORT, "dlq-tests")
    try:
        plain = f"{unique}.plain"  # beside them, a work queue with no dead-letter exchange
        conn.channel().queue_declare(plain, auto_delete=False)
        worker = Worker(queue)
        try:
            worker.wait_ready()
            declared = wait_for(lambda: _named(vhost, unique, "pidbox"), 10, "the worker's queues")
            assert queue in declared  # its task queue and its remote-control queue
            found = topology.survey([vhost], work=[f"{unique}*"]).findings
            assert [(f.queue, f.check) for f in found if f.queue.startswith(unique)] == [
                (plain, "no_dlx")]  # fmt: skip
        finally:
            worker.stop()
        conn.channel().queue_delete(plain)
    finally:
        conn.close()


def _named(vhost: str, prefix: str, word: str) -> list[str]:
    """The vhost's queues named with `prefix`, once one of them has `word` in its name."""
    listed = [q["name"] for q in mgmt.list_queues(vhost) if q["name"].startswith(prefix)]
    return listed if any(word in name for name in listed) else []
