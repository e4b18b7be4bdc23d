"""The cluster the tests use is a real one: three members, quorum queues replicated on all
three, a killed node seen down by the others, and the machine's own broker left alone."""

import base64
import json
import urllib.request

import pika
import pytest

pytestmark = pytest.mark.slow


def test_three_nodes_one_cluster_and_a_quorum_queue_on_all(cluster, unique):
    assert cluster.running() == {node.name for node in cluster.nodes}
    connection = pika.BlockingConnection(pika.URLParameters(cluster.nodes[1].url()))
    try:
        channel = connection.channel()
        channel.queue_declare(unique, durable=True, arguments={"x-queue-type": "quorum"})
        members = set(cluster.queue(unique)["members"])
        assert members == {node.name for node in cluster.nodes}
    finally:
        connection.channel().queue_delete(unique)
        connection.close()


def system_node() -> str:
    request = urllib.request.Request(
        "http://127.0.0.1:15672/api/overview?columns=node",
        headers={"Authorization": "Basic " + base64.b64encode(b"guest:guest").decode()},
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)["node"]


def test_a_killed_node_is_down_for_the_others_and_comes_back(cluster):
    before = system_node()
    victim = cluster.nodes[2]
    cluster.kill(victim)
    assert victim.name not in cluster.running()
    cluster.start(victim)
    cluster.wait_running()
    # The machine's own node on 5672 was never part of it.
    assert system_node() == before
    assert before not in {node.name for node in cluster.nodes}
