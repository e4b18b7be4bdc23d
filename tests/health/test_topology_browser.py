"""The topology health page in a real browser: a viewer sees each warning with its reason."""

import pytest

from tests.browser import log_in, screenshot
from tests.factories import make_user
from tests.topology import Topology

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
PASSWORD = "a-long-browser-password"


def test_a_viewer_reads_the_topology_warnings(page, live_server, channel, cleanup_queues, unique):
    top = Topology(channel, cleanup_queues, unique)
    bare = top.queue("orders")
    limited = top.queue(
        "invoices", durable=True, **{"x-queue-type": "quorum", "x-delivery-limit": 5}
    )
    viewer = make_user("viewer", password=PASSWORD)
    log_in(page, live_server, viewer.username, PASSWORD)

    page.goto(f"{live_server.url}/topology/")
    bare_row = page.locator("tr", has_text=bare)
    assert "no dead-letter exchange" in bare_row.inner_text()
    assert "delivery limit of 5" in page.locator("tr", has_text=limited).inner_text()
    bare_row.scroll_into_view_if_needed()
    screenshot(page, "topology-health")
