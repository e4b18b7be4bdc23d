"""/healthz and /readyz: what a load balancer or an orchestrator asks."""

import pytest
from django.test import Client

from dlq.health import probes
from tests.drainproc import free_port

pytestmark = pytest.mark.django_db


def test_it_answers_healthz_without_login():
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_it_is_ready_with_the_database_and_the_broker(rabbit):
    response = Client().get("/readyz")
    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ok", "broker": "ok"}


def test_it_is_not_ready_when_the_broker_cannot_be_reached(settings):
    """Anyone may ask, so the answer names the part, not where it lives: the reason is for
    the operator's `dlq_health ready`."""
    port = free_port()
    settings.DLQ_BROKER_URL = f"amqp://guest:secret-pw@127.0.0.1:{port}/prod"
    response = Client().get("/readyz")
    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "checks": {"database": "ok", "broker": "unreachable"},
    }
    reason = probes.check_broker()  # what `dlq_health ready` prints
    assert reason.startswith(f"unreachable (127.0.0.1:{port} vhost prod)")
    assert "secret-pw" not in reason


def test_probes_answer_only_get():
    assert Client().post("/healthz").status_code == 405
