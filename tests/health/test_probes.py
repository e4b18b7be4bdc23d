"""/healthz and /readyz: what a load balancer or an orchestrator asks."""

import pytest
from django.test import Client

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
    port = free_port()
    settings.DLQ_BROKER_URL = f"amqp://guest:secret-pw@127.0.0.1:{port}/%2F"
    response = Client().get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["broker"].startswith(f"unreachable (127.0.0.1:{port} vhost /)")
    assert "secret-pw" not in response.content.decode()


def test_probes_answer_only_get():
    assert Client().post("/healthz").status_code == 405
