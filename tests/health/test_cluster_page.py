"""The health page's cluster parts, with what the management API says made up: node names
and a drainer's address are the broker's and the drainer's text, escaped like any other."""

import pytest
from django.test import Client
from django.utils import timezone

from dlq.broker import mgmt
from dlq.health import cluster, topology
from dlq.models.health import DrainerHeartbeat
from tests.factories import client_for, make_user

pytestmark = pytest.mark.django_db

HOSTILE = '<img src=x onerror="alert(1)">@n1'


@pytest.fixture
def hostile_cluster(monkeypatch):
    monkeypatch.setattr(mgmt, "list_nodes", lambda: [
        {"name": HOSTILE, "running": False},
        {"name": "rabbit@n2", "running": True},
        {"name": "rabbit@n3", "running": True},
    ])  # fmt: skip
    monkeypatch.setattr(mgmt, "amqp_listeners", lambda: [
        {"node": HOSTILE, "protocol": "amqp", "ip_address": "10.0.0.1", "port": 5672},
        {"node": "rabbit@n2", "protocol": "amqp", "ip_address": "10.0.0.2", "port": 5672},
    ])  # fmt: skip
    monkeypatch.setattr(topology, "survey", topology.Survey)  # the queues: test_topology.py


def _heartbeat(node: str) -> None:
    now = timezone.now()
    DrainerHeartbeat.objects.create(name="dlq-drain h pid 7", host="h", pid=7, started_at=now,
                                    last_seen_at=now, node=node)  # fmt: skip


def test_a_viewer_sees_nodes_and_drainer_nodes_escaped(hostile_cluster):
    _heartbeat("10.0.0.1:5672,<b>x</b>:1")
    response = client_for(make_user("viewer")).get("/topology/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "<img" not in page and "<b>x" not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;@n1" in page
    assert "2 of 3 nodes running: the cluster works on" in page
    assert "&lt;b&gt;x&lt;/b&gt;:1" in page  # an address no listener has: shown as it is
    assert "node down" in page  # the drainer's node is the dead one


def test_metrics_name_each_node_and_the_drainers_node(hostile_cluster):
    _heartbeat("10.0.0.2:5672")
    text = client_for(make_user("viewer")).get("/metrics").content.decode()
    assert 'dlq_broker_node_up{node="rabbit@n2"} 1.0' in text
    assert 'dlq_broker_node_up{node="<img src=x onerror=\\"alert(1)\\">@n1"} 0.0' in text
    assert (
        'dlq_drainer_node{address="10.0.0.2:5672",drainer="dlq-drain h pid 7",node="rabbit@n2"} 1.0'
        in text
    )


def test_a_node_listening_on_every_address_is_found_by_its_port(monkeypatch):
    monkeypatch.setattr(mgmt, "list_nodes", lambda: [{"name": "rabbit@a", "running": True}])
    monkeypatch.setattr(mgmt, "amqp_listeners", lambda: [
        {"node": "rabbit@a", "protocol": "amqp", "ip_address": "::", "port": 5681},
    ])  # fmt: skip
    [where] = cluster.drainer_nodes(cluster.read(), "rabbit-a.internal:5681")
    assert where == {"address": "rabbit-a.internal:5681", "node": "rabbit@a", "running": True}


def test_the_page_needs_a_role():
    assert Client().get("/topology/").status_code == 302
    assert client_for(make_user(None)).get("/topology/").status_code == 403
