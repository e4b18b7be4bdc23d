"""Fixtures for the drainer resilience tests (a plugin of tests/conftest.py): drainer
subprocesses, their database, a broker connection and a throwaway PostgreSQL."""

import re

import pytest

from tests.drainproc import Broker, DrainProcess, ScratchPostgres, database_url

LEDGER = re.compile(r"ledger=(dlq-drain-acks\.[0-9a-f]{32})")


@pytest.fixture
def broker(rabbit):
    """The test's own broker connection; the queues and exchanges it declared are deleted."""
    b = Broker()
    yield b
    b.close()


@pytest.fixture
def spawn(rabbit):
    """Start drainer subprocesses; each still running at teardown is SIGKILLed (by its pid)."""
    started: list[DrainProcess] = []

    def start(queues, db_url, **kwargs) -> DrainProcess:
        proc = DrainProcess(queues, db_url, **kwargs)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        proc.cleanup()
    # The ack ledgers of drainers that were killed (a clean stop deletes its own).
    ledgers = {m for proc in started for m in LEDGER.findall(proc.log_text)}
    if ledgers:
        b = Broker()
        b.queues = sorted(ledgers)
        b.close()


@pytest.fixture
def db_url(transactional_db):
    """DATABASE_URL of pytest-django's test database, for drainer subprocesses."""
    return database_url()


@pytest.fixture
def scratch_pg():
    """A throwaway PostgreSQL 15, migrated, that a test may stop and start."""
    pg = ScratchPostgres()
    try:
        pg.migrate()
        yield pg
    finally:
        pg.destroy()
