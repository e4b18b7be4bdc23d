"""/metrics: the Prometheus text format, parsed by prometheus_client, and who may read it."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from dlq.actions import message as message_actions
from dlq.alerts import channels
from dlq.jobs import control
from dlq.models.actions import Outcome
from tests.alertfactory import add_channel
from tests.conftest import drain_once, publish
from tests.factories import client_for, make_message, make_user
from tests.topology import Topology

pytestmark = pytest.mark.django_db(transaction=True)
OUTSIDE = "203.0.113.9"  # not in the default DLQ_METRICS_ALLOWED_NETS (loopback)


def scrape(client: Client | None = None, **extra) -> dict:
    """{(name, labels): value} of every sample on /metrics."""
    response = (client or Client()).get("/metrics", **extra)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=")
    families = text_string_to_metric_families(response.content.decode())
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}


def value(samples: dict, name: str, **labels) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def test_it_counts_drained_stored_replayed_alerted_and_job_progress(
    channel, cleanup_queues, unique, endpoint
):
    top = Topology(channel, cleanup_queues, unique)
    parking = top.queue("dlq")
    for i in range(3):
        publish(channel, "", parking, f"m{i}".encode())
    drainer = drain_once([parking])
    assert drainer.stored == 3

    work = top.queue("work")
    replayed = make_message(queue=parking, exchange="", routing_key=work, died_in=work)
    assert (
        message_actions.replay_one(replayed.pk, "failed_queue", "ops", "fixed").outcome
        == "confirmed"
    )
    discarded = make_message(queue=parking)
    message_actions.discard(discarded.pk, "ops", "noise")
    channels.send_test(add_channel("slack", endpoint, name=f"{unique}-slack"))
    job = control.create_job("ops", "discard", ids=[make_message(queue=parking).pk], reason="bulk")

    samples = scrape()
    assert value(samples, "dlq_messages_drained_total", vhost="/", queue=parking) == 3
    assert value(samples, "dlq_messages", vhost="/", queue=parking, status="parked") == 4
    assert value(samples, "dlq_messages", vhost="/", queue=parking, status="replayed") == 1
    assert value(samples, "dlq_messages", vhost="/", queue=parking, status="discarded") == 1
    assert value(samples, "dlq_replay_attempts", outcome=Outcome.CONFIRMED) >= 1
    assert value(samples, "dlq_alert_attempts", channel=f"{unique}-slack", status="sent") == 1
    key = {"job": str(job.pk), "action": "discard", "status": "pending"}
    assert value(samples, "dlq_job_items", state="total", **key) == 1
    assert value(samples, "dlq_job_progress_ratio", **key) == 0.0

    name = drainer.name
    assert value(samples, "dlq_drain_batch_seconds_count", drainer=name) >= 1
    assert value(samples, "dlq_drain_batch_seconds_bucket", drainer=name, le="+Inf") >= 1
    assert value(samples, "dlq_drainer_up", drainer=name) == 0  # --once has stopped cleanly
    assert value(samples, "dlq_drainers_running") is not None


def test_it_serves_the_internal_network_a_token_and_viewers_only(settings):
    settings.DLQ_METRICS_TOKEN = "s3cret-token"
    outside = {"REMOTE_ADDR": OUTSIDE}
    assert Client().get("/metrics").status_code == 200  # the test client is 127.0.0.1

    anonymous = Client().get("/metrics", **outside)
    assert anonymous.status_code == 401 and anonymous["WWW-Authenticate"] == "Bearer"
    wrong = Client(headers={"Authorization": "Bearer nope"}).get("/metrics", **outside)
    assert wrong.status_code == 401
    scrape(Client(headers={"Authorization": "Bearer s3cret-token"}), **outside)
    scrape(client_for(make_user("viewer")), **outside)
    assert client_for(make_user(None)).get("/metrics", **outside).status_code == 403


def test_a_token_is_refused_when_none_is_configured(settings):
    settings.DLQ_METRICS_TOKEN = ""
    response = Client(headers={"Authorization": "Bearer "}).get("/metrics")
    assert response.status_code == 401  # a Bearer header never falls back to the address


def test_the_network_allowance_can_be_switched_off(monkeypatch):
    from console.env import env_networks

    monkeypatch.setenv("DLQ_METRICS_ALLOWED_NETS", "none")
    assert env_networks("DLQ_METRICS_ALLOWED_NETS", "127.0.0.0/8") == []
    monkeypatch.setenv("DLQ_METRICS_ALLOWED_NETS", "10.0.0.0/8,junk")
    with pytest.raises(ImproperlyConfigured, match="DLQ_METRICS_ALLOWED_NETS: 'junk'"):
        env_networks("DLQ_METRICS_ALLOWED_NETS", "127.0.0.0/8")


def test_loopback_is_refused_once_switched_off(settings):
    settings.DLQ_METRICS_ALLOWED_NETS = []
    assert Client().get("/metrics").status_code == 401


def test_it_shows_how_far_behind_the_search_index_is():
    from dlq.messages import search

    search.catch_up()
    assert value(scrape(), "dlq_search_index_lag_messages") == 0
    make_message(body=b"one")
    make_message(body=b"two")
    assert value(scrape(), "dlq_search_index_lag_messages") == 2
    search.catch_up()
    assert value(scrape(), "dlq_search_index_lag_messages") == 0
