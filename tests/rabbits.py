"""The RabbitMQ brokers every broker-facing test runs on (a plugin of tests/conftest.py).

The machine's own RabbitMQ 3.10 and a RabbitMQ 4.0 node beside it (`../shared/rabbitmq4/`,
started by `.ci/services`). A test that talks to a broker asks for the `rabbit` fixture
(the `channel`, `top` and drainer fixtures do it for it) and so runs once per broker, its id
naming the broker: `test_x[rabbitmq-4.0]`.

A broker that does not answer is not silently skipped: its half of the suite is deselected
and the run's summary says so, once, with the reason. With DLQ_TEST_ALL_BROKERS=1 (CI) a
missing broker is an error instead.
"""

import base64
import json
import os
import socket
import urllib.request
from dataclasses import dataclass
from functools import cache
from urllib.parse import urlsplit

import pytest

from tests.celeryworker import CELERY_TRANSPORT


@dataclass(frozen=True)
class Rabbit:
    id: str  # the test id's part: "rabbitmq-3.10"
    version: str  # what its management API must report, as a prefix: "3.10"
    url: str
    management: str

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def v4(self) -> bool:
        return self.major >= 4


RABBITS = (
    Rabbit(
        "rabbitmq-3.10",
        "3.10",
        os.environ.get("DLQ_TEST_RABBIT3_URL", "amqp://guest:guest@127.0.0.1:5672/%2F"),
        os.environ.get("DLQ_TEST_RABBIT3_MANAGEMENT", "http://guest:guest@127.0.0.1:15672"),
    ),
    Rabbit(
        "rabbitmq-4.0",
        "4.0",
        os.environ.get("DLQ_TEST_RABBIT4_URL", "amqp://guest:guest@127.0.0.1:5673/%2F"),
        os.environ.get("DLQ_TEST_RABBIT4_MANAGEMENT", "http://guest:guest@127.0.0.1:15673"),
    ),
)
START_HINT = {"rabbitmq-4.0": "start it with ../shared/rabbitmq4/setup.sh and start.sh"}


@cache
def missing(rabbit: Rabbit) -> str:
    """Why the broker cannot be used ("" when it can): not listening, or another version."""
    amqp = urlsplit(rabbit.url)
    try:
        socket.create_connection((amqp.hostname, amqp.port or 5672), timeout=3).close()
    except OSError as e:
        return f"nothing answers at {amqp.hostname}:{amqp.port} ({e.strerror or e})"
    try:
        version = overview(rabbit).get("rabbitmq_version", "")
    except OSError as e:
        where = urlsplit(rabbit.management)
        return f"its management API at {where.hostname}:{where.port} fails ({e})"
    if not (version == rabbit.version or version.startswith(rabbit.version + ".")):
        return f"the broker there is RabbitMQ {version}, not {rabbit.version}"
    return ""


def overview(rabbit: Rabbit) -> dict:
    parts = urlsplit(rabbit.management)
    request = urllib.request.Request(
        f"{parts.scheme}://{parts.hostname}:{parts.port}/api/overview?columns=rabbitmq_version"
    )
    creds = f"{parts.username}:{parts.password}".encode()
    request.add_header("Authorization", "Basic " + base64.b64encode(creds).decode())
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)


@pytest.fixture(params=RABBITS, ids=[r.id for r in RABBITS])
def rabbit(request, settings, monkeypatch) -> Rabbit:
    """The broker this test runs on: the console's settings and any process the test
    starts (drainers, workers, commands) point at it. Celery's own transport stays on one
    broker so that the test process and its worker meet."""
    chosen = request.param
    settings.DLQ_BROKER_URL = chosen.url
    settings.DLQ_MANAGEMENT_URL = chosen.management
    monkeypatch.setenv("DLQ_BROKER_URL", chosen.url)
    monkeypatch.setenv("DLQ_MANAGEMENT_URL", chosen.management)
    monkeypatch.setenv("CELERY_BROKER_URL", CELERY_TRANSPORT)
    return chosen


def only_on(rabbit_id: str, why: str):
    """Run a broker-facing test on one broker only; `why` is there to be read here."""
    assert why.strip(), "say why the test runs on one broker only"
    [chosen] = [r for r in RABBITS if r.id == rabbit_id]
    return pytest.mark.parametrize("rabbit", [chosen], indirect=True, ids=[chosen.id])


def pytest_collection_modifyitems(config, items):
    unusable = {r.id: why for r in RABBITS if (why := missing(r))} if _uses_rabbit(items) else {}
    if not unusable:
        return
    if os.environ.get("DLQ_TEST_ALL_BROKERS") == "1":
        lines = [f"{name}: {why}" for name, why in unusable.items()]
        raise pytest.UsageError("DLQ_TEST_ALL_BROKERS=1 but " + "; ".join(lines))
    keep, dropped = [], []
    for item in items:
        (dropped if _rabbit_of(item) in unusable else keep).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
    config.stash[_NOT_RUN] = {
        name: (why, sum(_rabbit_of(i) == name for i in dropped)) for name, why in unusable.items()
    }


def pytest_terminal_summary(terminalreporter, config):
    for name, (why, count) in config.stash.get(_NOT_RUN, {}).items():
        hint = START_HINT.get(name, "")
        terminalreporter.write_line(
            f"NOT RUN on {name}: {count} broker-facing tests, because {why}"
            + (f"; {hint}" if hint else ""),
            yellow=True,
            bold=True,
        )


_NOT_RUN = pytest.StashKey[dict]()


def _rabbit_of(item) -> str | None:
    callspec = getattr(item, "callspec", None)
    chosen = callspec.params.get("rabbit") if callspec else None
    return chosen.id if chosen else None


def _uses_rabbit(items) -> bool:
    return any(_rabbit_of(i) for i in items)
