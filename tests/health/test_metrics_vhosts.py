"""/metrics keeps a `vhost` label on every per-queue series: the same queue name in two
vhosts is two series, a slash inside a vhost name stays as it is."""

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from dlq.drain import store
from tests.factories import make_messages

pytestmark = pytest.mark.django_db


def scrape() -> dict:
    response = Client().get("/metrics")  # the test client is 127.0.0.1: allowed
    assert response.status_code == 200, response.content
    families = text_string_to_metric_families(response.content.decode())
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}


def test_per_queue_series_carry_their_vhost(unique):
    queue = f"{unique}.dlq"
    make_messages(2, queue=queue, vhost=f"{unique}-billing")
    make_messages(3, queue=queue, vhost=f"{unique}/a/b")
    store.note_queues(f"{unique}-billing", [{"name": queue, "type": "quorum"}])
    samples = scrape()
    for vhost, count in ((f"{unique}-billing", 2), (f"{unique}/a/b", 3)):
        labels = tuple(sorted({"vhost": vhost, "queue": queue, "status": "parked"}.items()))
        assert samples[("dlq_messages", labels)] == count
