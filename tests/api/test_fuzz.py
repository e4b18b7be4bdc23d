"""Fuzz the API from its own OpenAPI schema (schemathesis), as an operator and as a viewer,
against the live Django app (WSGI, real PostgreSQL, real RabbitMQ): no 5xx, and every
status code, content type and body as the schema documents it."""

import json

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from ninja.responses import NinjaJSONEncoder
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from console.wsgi import application
from dlq.accounts.tokens import create_token
from dlq.actions import message as message_actions
from dlq.api.root import api
from dlq.jobs import control, running
from dlq.tasks import jobs as job_tasks
from tests.factories import make_message, make_user
from tests.topology import Topology

pytestmark = pytest.mark.django_db
# No example database: nothing is written into the source tree, and every run explores anew.
FUZZ = {"deadline": None, "database": None, "suppress_health_check": list(HealthCheck)}
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def _schema(config=None):
    """The schema /api/v1/openapi.json serves, made by the API object itself when the module
    is collected (serving it needs a signed-in caller, hence a database); the calls then go
    through the WSGI app."""
    document = json.loads(
        json.dumps(api.get_openapi_schema(path_prefix="/api/v1/"), cls=NinjaJSONEncoder)
    )
    loaded = schemathesis.openapi.from_dict(document, config=config)
    loaded.app = application
    return loaded


# The import's body is NDJSON text: sent as the string the schema describes.
schemathesis.serializer.alias("application/x-ndjson", "text/plain")
schema = _schema()
# A viewer reads what an operator reads and is refused every action before its body is
# looked at: the fuzzing phase alone is enough (no coverage phase), which halves the time.
FUZZING_ONLY = SchemathesisConfig.from_dict({"phases": {"coverage": {"enabled": False}}})
viewer_schema = _schema(FUZZING_ONLY)


@pytest.fixture(autouse=True)
def _keep_the_test_connection():
    """As Django's test client does: a request must not close the test's database connection
    (the test runs in a transaction that is rolled back afterwards)."""
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    yield
    for signal in (request_started, request_finished):
        signal.connect(close_old_connections)


@pytest.fixture
def world(channel, cleanup_queues, unique, monkeypatch):
    """Messages in every status and jobs to aim at; replays go only to this test's queue or
    to an exchange that does not exist. Jobs are never started (no worker involved)."""
    monkeypatch.setattr(job_tasks, "start", lambda job: None)
    top = Topology(channel, cleanup_queues, unique)
    work = top.queue("work")
    seed = {"queue": top.name("dlq"), "died_in": work, "exchange": top.name("gone")}
    parked = [make_message(**seed, body=b"plain text") for _ in range(2)]
    parked.append(make_message(**seed, content_type="application/json"))
    discarded = make_message(**seed)
    done = control.create_job("fuzz", "discard", ids=[discarded.pk], reason="seed")
    message_actions.discard(discarded.pk, "fuzz", "seed")  # so the job skips it
    replayed = make_message(**seed)
    message_actions.replay_one(replayed.pk, "failed_queue", "fuzz", "seed")
    pending = control.create_job("fuzz", "discard", ids=[parked[0].pk], reason="seed")
    running.run_job(done.pk)
    return {
        "messages": [m.pk for m in (*parked, discarded, replayed)],
        "jobs": [pending.pk, done.pk],
        "tokens": {role: create_token(make_user(role)) for role in ("operator", "viewer")},
    }


def _aim(case, world) -> None:
    """Most generated ids are replaced by a real one, so the fuzzer reaches past the 404."""
    given = case.path_parameters.get("id") if case.path_parameters else None
    if not isinstance(given, int) or given % 4 == 0:
        return
    known = world["jobs"] if case.path.startswith("/api/v1/jobs") else world["messages"]
    case.path_parameters["id"] = known[given % len(known)]


def _check(case, world, role: str) -> None:
    _aim(case, world)
    headers = {"Authorization": f"Bearer {world['tokens'][role]}"}
    case.call_and_validate(headers=headers, checks=CHECKS)


@schema.parametrize()
@settings(**FUZZ, max_examples=25)
def test_it_answers_an_operator_as_documented(case, world):
    _check(case, world, "operator")


@viewer_schema.parametrize()
@settings(**FUZZ, max_examples=15)
def test_it_answers_a_viewer_as_documented(case, world):
    _check(case, world, "viewer")
