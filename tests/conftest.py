"""Shared fixtures: a real RabbitMQ, a real PostgreSQL; every test names its own queues."""

import uuid

import pytest

from dlq.broker import amqp, codec
from dlq.drain.drainer import Drainer
from dlq.tasks import jobs as job_tasks
from tests.celeryworker import CELERY_TRANSPORT, jobs_on_worker
from tests.factories import client_for, make_user
from tests.topology import Topology

pytest_plugins = [
    "tests.alertfactory",
    "tests.authgateway",
    "tests.browser",
    "tests.cluster",
    "tests.drainfixtures",
    "tests.httprecorder",
    "tests.nodeproxy",
    "tests.oidcprovider",
    "tests.rabbits",
    "tests.slackapi",
    "tests.telegramapi",
    "tests.vhosts",
]


@pytest.fixture
def unique():
    """A name prefix no other test (or concurrent test run) uses."""
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture
def channel(rabbit):
    """A channel on the broker the test runs on (see tests/rabbits.py)."""
    conn = amqp.connect(rabbit.url, "dlq-tests")
    ch = conn.channel()
    yield ch
    if conn.is_open:
        conn.close()


@pytest.fixture
def cleanup_queues(rabbit, channel):
    """Queues and exchanges a test declares; deleted afterwards."""
    made = {"queues": [], "exchanges": [], "celery": []}
    yield made
    _delete(rabbit.url, made["queues"], made["exchanges"])
    if made["celery"]:  # Celery's own queue and exchange live on its transport
        _delete(CELERY_TRANSPORT, made["celery"], made["celery"])


def _delete(url: str, queues: list[str], exchanges: list[str]) -> None:
    conn = amqp.connect(url, "dlq-tests-cleanup")
    ch = conn.channel()
    for name in queues:
        ch.queue_delete(name)
    for name in exchanges:
        ch.exchange_delete(name)
    conn.close()


@pytest.fixture
def top(channel, cleanup_queues, unique):
    return Topology(channel, cleanup_queues, unique)


@pytest.fixture
def viewer():
    """A logged-in browser session (a module's own fixture may give a token client)."""
    return client_for(make_user("viewer"))


@pytest.fixture
def operator():
    return client_for(make_user("operator"))


@pytest.fixture
def admin():
    return client_for(make_user("admin"))


@pytest.fixture
def started(monkeypatch):
    """The jobs a page or the API handed to the worker queue, in order (none runs)."""
    handed = []
    monkeypatch.setattr(job_tasks, "start", lambda job: handed.append(job.pk))
    return handed


@pytest.fixture
def worker(top, monkeypatch):
    """A real Celery worker that runs the jobs pages and the API hand over."""
    with jobs_on_worker(top, monkeypatch) as running:
        yield running


def publish(ch, exchange: str, routing_key: str, body: bytes, headers: dict | None = None,
            **properties):  # fmt: skip
    """Publish with the console's codec; headers are given as plain Python values or typed."""
    typed = None
    if headers is not None:
        typed = {
            k: v if isinstance(v, dict) and "type" in v else codec.typed(v)
            for k, v in headers.items()
        }
    ch.basic_publish(exchange, routing_key, body, amqp.make_properties(properties, typed))


def drain_once(patterns: list[str], **kwargs) -> Drainer:
    """Drain the queues once from the broker the test runs on (its settings)."""
    drainer = Drainer(patterns=patterns, once=True, **kwargs)
    assert drainer.run() == 0
    return drainer
