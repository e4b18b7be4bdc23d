"""The health page in a real browser with a node of the cluster killed: what an operator sees."""

import pytest
from django.utils import timezone

from dlq.models.health import DrainerHeartbeat
from tests.browser import log_in, screenshot
from tests.drainproc import wait_for
from tests.factories import make_user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PASSWORD = "a-long-browser-password"


def test_a_viewer_sees_the_dead_node_and_what_it_hurts(
    page, live_server, on_cluster, declare, unique
):
    cluster = on_cluster
    first, second, third = cluster.nodes
    quorum = declare(f"{unique}.orders.dlq", first, **{"x-queue-type": "quorum"})
    classic = declare(f"{unique}.billing.dlq", third)  # lives on node 3 alone
    now = timezone.now()
    DrainerHeartbeat.objects.create(name="dlq-drain web-1 pid 4242", host="web-1", pid=4242,
                                    started_at=now, last_seen_at=now, queues=2,
                                    node=f"127.0.0.1:{second.amqp_port}")  # fmt: skip
    cluster.kill(third)
    wait_for(lambda: third.name not in cluster.running(), 30, "the others to see node 3 down")
    viewer = make_user("viewer", password=PASSWORD)
    log_in(page, live_server, viewer.username, PASSWORD)

    page.goto(f"{live_server.url}/topology/")
    nodes = page.locator("table.nodes")
    assert "down" in nodes.locator("tr", has_text=third.name).inner_text()
    assert "up" in nodes.locator("tr", has_text=first.name).inner_text()
    assert "2 of 3 nodes running" in page.get_by_role("alert").first.inner_text()
    assert f"connected to {second.name}" in page.locator("li", has_text="pid 4242").inner_text()
    unavailable = page.locator("section.check-unavailable")
    assert unavailable.locator("h3").inner_text().startswith("Unavailable")
    assert "which is down" in unavailable.locator("tr", has_text=classic).inner_text()
    replicas = page.locator("section.check-under_replicated")
    assert replicas.locator("h3").inner_text().startswith("Replicas down")
    assert "2 of 3 replicas online" in replicas.locator("tr", has_text=quorum).inner_text()
    screenshot(page, "cluster-health-node-down")
