"""Issue 26, point 8: the topology page groups its warnings by check, and an admin
acknowledges a warning with a reason (audited); everyone sees who did, when and why."""

import json
import re

import pytest

from dlq.models import AuditEntry, TopologyAcknowledgement
from tests.factories import client_for, make_user, post
from tests.topology import Topology
from tests.uiops import body

pytestmark = pytest.mark.django_db
ACK, WITHDRAW = "/topology/acknowledge/", "/topology/withdraw/"


@pytest.fixture
def top(channel, cleanup_queues, unique):
    return Topology(channel, cleanup_queues, unique)


def read(html: str) -> str:
    """The text as read, a space where a tag was (table cells apart)."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def sentences(html: str) -> str:
    """The text as read, tags simply gone (names carry <wbr> after their dots)."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html))


def section(html: str, check: str) -> str:
    """The html's part for one check (its heading, count, explanation, rows), as read."""
    found = re.search(rf'<section class="check check-{check}".*?</section>', html, re.S)
    return read(found.group(0)) if found else ""


def acknowledged(html: str) -> str:
    found = re.search(r'<details class="acknowledged".*?</details>\s*(?=<p|</section)', html, re.S)
    return read(found.group(0)) if found else ""


def key(queue: str, reason: str = "owned by the billing team; they replay by hand") -> dict:
    return {"vhost": "/", "queue": queue, "check_name": "no_dlx", "reason": reason}


def test_warnings_come_grouped_by_check_with_a_count_and_why(top):
    bare, other = top.queue("orders"), top.queue("emails")
    top.queue("orders.dlq")  # drained (DLQ_QUEUES: *.dlq), and rightly without a DLX
    limited = top.queue("invoices", durable=True, **{"x-queue-type": "quorum",
                                                    "x-delivery-limit": 5})  # fmt: skip
    html = body(client_for(make_user("viewer")).get("/topology/"))
    no_dlx = section(html, "no_dlx")
    assert re.match(r"\s*No dead-letter exchange (\d+) ", no_dlx)
    assert bare in no_dlx and other in no_dlx and limited not in no_dlx
    assert "give the queue a dead-letter exchange" in no_dlx  # how to fix it
    assert limited in section(html, "delivery_limit")
    left_out = read(re.search(r'<p class="muted left-out">.*?</p>', html, re.S).group(0))
    assert "Left out as fine by design" in left_out
    assert "parking queues with no dead-letter exchange" in left_out


def test_an_admin_acknowledges_a_warning_and_withdraws_it(top):
    bare = top.queue("orders")
    user = make_user("admin")
    admin = client_for(user)
    response = post(admin, ACK, key(bare), follow=True)
    assert response.status_code == 200
    html = body(response)
    assert bare not in section(html, "no_dlx")
    moved = acknowledged(html)
    assert bare in moved and "No dead-letter exchange" in moved
    assert f"by {user.username}" in moved
    assert "owned by the billing team" in moved and "UTC" in moved
    entry = AuditEntry.objects.get(action="topology_ack")
    assert entry.reason == "owned by the billing team; they replay by hand"
    assert json.loads(entry.detail) == {"vhost": "/", "queue": bare, "check": "no_dlx"}
    log = sentences(body(admin.get("/audit/")))
    assert f"acknowledged the warning no dead-letter exchange on queue {bare} in vhost /" in log

    html = body(post(admin, WITHDRAW, key(bare, "billing moved to a DLX policy"), follow=True))
    assert bare in section(html, "no_dlx") and bare not in acknowledged(html)
    entry = AuditEntry.objects.get(action="topology_unack")
    assert entry.reason == "billing moved to a DLX policy"
    assert json.loads(entry.detail)["acknowledged_for"].startswith("owned by the billing")
    log = sentences(body(admin.get("/audit/")))
    assert (
        f"withdrew the acknowledgement of the warning no dead-letter exchange on queue {bare}"
        in log
    )


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_others_see_acknowledgements_but_may_not_make_them(top, role):
    bare, other = top.queue("orders"), top.queue("emails")
    assert post(client_for(make_user("admin")), ACK, key(bare)).status_code == 302
    someone = client_for(make_user(role))
    html = body(someone.get("/topology/"))
    assert bare in acknowledged(html) and other in section(html, "no_dlx")
    assert "Acknowledge" not in section(html, "no_dlx") and "Withdraw" not in acknowledged(html)
    assert ACK not in html and WITHDRAW not in html
    assert post(someone, ACK, key(other)).status_code == 403
    assert post(someone, WITHDRAW, key(bare)).status_code == 403
    assert TopologyAcknowledgement.objects.count() == 1


def test_a_post_without_the_csrf_token_is_refused(top):
    bare = top.queue("orders")
    admin = client_for(make_user("admin"))  # enforces CSRF as a browser session
    assert admin.post(ACK, key(bare)).status_code == 403
    assert not TopologyAcknowledgement.objects.exists()


def test_bad_input_answers_400_in_the_row(top):
    bare = top.queue("orders")
    admin = client_for(make_user("admin"))
    response = post(admin, ACK, key(bare, "   "))
    assert response.status_code == 400
    assert "This field is required." in section(body(response), "no_dlx")
    response = post(admin, ACK, {**key(bare), "check_name": "made_up"})
    assert response.status_code == 400 and "must be one of" in read(body(response))
    assert post(admin, ACK, key(bare)).status_code == 302
    response = post(admin, ACK, key(bare))
    assert response.status_code == 400 and "is acknowledged already" in read(body(response))
    response = post(admin, WITHDRAW, key(top.name("never")))
    assert response.status_code == 400
    assert AuditEntry.objects.filter(action="topology_ack").count() == 1


def test_hostile_names_stay_escaped(top):
    hostile = top.queue('<img src=x onerror="alert(1)">')
    admin = client_for(make_user("admin"))
    assert post(admin, ACK, key(hostile, "<b>bold</b> reason")).status_code == 302
    html = body(admin.get("/topology/"))
    assert "<img" not in html and "<b>bold" not in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html
    assert "&lt;b&gt;bold&lt;/b&gt; reason" in html


def test_an_acknowledgement_whose_warning_is_gone_stays_listed(top):
    gone = top.name("deleted")
    admin = client_for(make_user("admin"))
    assert post(admin, ACK, key(gone)).status_code == 302
    assert f"{gone} No dead-letter exchange (no longer found)" in acknowledged(
        body(admin.get("/topology/"))
    )


def test_a_long_part_starts_folded(settings, top, unique):
    settings.DLQ_WORK_QUEUES = [f"{unique}.*"]
    for n in range(11):
        top.queue(f"work{n:02}")
    html = body(client_for(make_user("viewer")).get("/topology/"))
    part = re.search(r'<section class="check check-no_dlx".*?</section>', html, re.S).group(0)
    assert "No dead-letter exchange" in part and "11 queues</summary>" in part
    assert "<details>" in part and "<details open>" not in part  # folded: 11 rows
