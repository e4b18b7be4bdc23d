"""The drainer's heartbeat: what the overview shows, and the alert when it goes silent."""

import signal
from datetime import timedelta

import pytest
from django.template.loader import render_to_string
from django.utils import timezone

from dlq.alerts import delivery
from dlq.drain.heartbeat import Heartbeat
from dlq.health import drainers
from dlq.models.health import DrainCounter, DrainerHeartbeat
from tests.alertfactory import add_channel, sent_to
from tests.drainproc import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def row_of(proc) -> DrainerHeartbeat | None:
    return DrainerHeartbeat.objects.filter(pid=proc.pid).first()


def fragment() -> str:
    return " ".join(render_to_string("_drainers.html", drainers.overview_context()).split())


def test_it_shows_a_running_drainer_then_its_clean_stop(broker, spawn, db_url, unique):
    parking = broker.declare(f"{unique}.dlq")
    broker.publish_many(parking, [(f"m{i}".encode(), {}) for i in range(5)])
    proc = spawn([f"{unique}.dlq"], db_url)

    row = wait_for(lambda: (r := row_of(proc)) and r.stored == 5 and r, 60, "a heartbeat")
    assert row.queues == 1 and row.last_batch_at is not None and row.stopped_at is None
    assert "draining 1 queue, last batch" in fragment()
    counter = DrainCounter.objects.get(queue=parking)
    assert counter.total == 5

    assert proc.stop(signal.SIGTERM) == 0
    row = row_of(proc)
    assert row.stopped_at is not None
    text = fragment()
    assert "stopped" in text and "No drainer is running" in text


def test_it_alerts_once_when_a_drainer_stops_reporting(broker, spawn, db_url, unique, endpoint):
    broker.declare(f"{unique}.dlq")
    slack = add_channel("slack", endpoint)
    proc = spawn([f"{unique}.dlq"], db_url)
    wait_for(lambda: row_of(proc), 60, "a heartbeat")
    proc.kill()  # no clean stop: the row stays as it was last written

    assert drainers.alert_stale() == []  # not silent for long enough yet
    later = timezone.now() + timedelta(seconds=120)
    attempt_ids = drainers.alert_stale(now=later)
    assert len(attempt_ids) == 1
    assert drainers.alert_stale(now=later + timedelta(seconds=60)) == []  # once

    delivery.deliver_attempt(attempt_ids[0], now=later)
    [request] = sent_to(endpoint, "slack")
    text = request.body.decode()
    assert "A drainer stopped reporting" in text and f"pid {proc.pid}" in text
    assert slack.alertattempt_set.get().status == "sent"

    described = {d["pid"]: d for d in drainers.overview_context(now=later)["drainers"]}
    assert described[proc.pid]["state"] == "not reporting"


def test_the_panel_refreshes_itself_for_viewers_only(db):
    from django.test import Client

    from tests.factories import client_for, make_user

    Heartbeat("dlq-drain test pid 1").write()
    response = client_for(make_user("viewer")).get("/drainers/")
    assert response.status_code == 200
    panel = response.content.decode()
    assert 'hx-get="/drainers/"' in panel and "overview_context" not in panel
    assert "draining 0 queues, no batch yet" in " ".join(panel.split())
    assert Client().get("/drainers/").status_code == 302
    assert client_for(make_user(None)).get("/drainers/").status_code == 403


def test_the_overview_shows_the_drainers(db):
    from tests.factories import client_for, make_user

    viewer = client_for(make_user("viewer"))
    assert "No drainer is running" in viewer.get("/").content.decode()

    Heartbeat("dlq-drain test pid 1").write()
    page = " ".join(viewer.get("/").content.decode().split())
    assert "draining 0 queues, no batch yet" in page
    assert "No drainer is running" not in page
