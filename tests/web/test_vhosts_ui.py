"""Operators see the vhost: a vhost column and filter on the messages list once more than one
vhost is drained, and vhost-qualified queue names (bare in `/`, `vhost/queue` elsewhere, a
slash in a vhost written %2F) in the list, the overview, the groups, a message's page, the
bulk review and the audit log; every name escaped."""

import re

import pytest

from dlq import audit
from dlq.drain import store
from dlq.models import AuditAction, DrainedQueue, Message
from tests.factories import make_message, make_messages

pytestmark = pytest.mark.django_db


def text(response) -> str:
    assert response.status_code == 200, response.content[:2000]
    return response.content.decode()


def shown(response) -> str:
    """The page as a reader takes its names: without the line-break hints in them (<wbr>)
    and their cells' class."""
    page = text(response).replace("<wbr>", "")
    return page.replace('<td class="type-name">', "<td>")


def row_ids(html: str) -> list[int]:
    return [int(pk) for pk in re.findall(r'href="/messages/(\d+)/"', html)]


@pytest.fixture
def one_vhost():
    """Only vhost / holds anything (rows other tests left behind are hidden here)."""
    DrainedQueue.objects.all().delete()
    Message.objects.exclude(vhost="/").delete()


@pytest.fixture
def estate(unique):
    """The same queue parked in `/`, in `<unique>-billing` and in `<unique>/a/b`."""
    queue = f"{unique}.dlq"
    return queue, {
        "/": make_message(queue=queue, vhost="/"),
        "billing": make_message(queue=queue, vhost=f"{unique}-billing", died_in="invoices"),
        "slashed": make_message(queue=queue, vhost=f"{unique}/a/b", died_in="shipments"),
    }


def test_one_vhost_needs_no_vhost_column_nor_filter(viewer, one_vhost, unique):
    make_message(queue=f"{unique}.dlq")
    store.note_queues("/", [{"name": f"{unique}.dlq", "type": "classic"}])
    page = text(viewer.get("/messages/"))
    assert 'id="f-vhost"' not in page and ">Vhost</th>" not in page
    # A vhost filter in the URL (a bookmarked link) still shows its field.
    page = text(viewer.get("/messages/", {"vhost": "/"}))
    assert 'id="f-vhost"' in page and 'value="/"' in page


def test_a_drained_queue_in_another_vhost_brings_the_column(viewer, one_vhost, unique):
    make_message(queue=f"{unique}.dlq")
    store.note_queues(f"{unique}-billing", [{"name": f"{unique}.dlq", "type": "quorum"}])
    page = text(viewer.get("/messages/"))
    assert 'id="f-vhost"' in page and ">Vhost</th>" in page
    assert f'<option value="{unique}-billing">' in page


def test_the_list_shows_qualified_queues_and_filters_by_vhost(viewer, estate, unique):
    queue, made = estate
    page = shown(viewer.get("/messages/", {"queue": queue}))
    assert ">Vhost</th>" in page and 'id="f-vhost"' in page
    assert f"<td>{unique}-billing/{queue}</td>" in page
    assert f"<td>{unique}%2Fa%2Fb/{queue}</td>" in page
    assert f"<td>{queue}</td>" in page  # vhost /: the bare name
    assert f"<td>{unique}/a/b</td>" in page  # the vhost column: the name as it is

    billing = text(viewer.get("/messages/", {"queue": queue, "vhost": f"{unique}-billing"}))
    assert row_ids(billing) == [made["billing"].pk]
    slashed = text(viewer.get("/messages/", {"queue": queue, "vhost": f"{unique}/a/b"}))
    assert row_ids(slashed) == [made["slashed"].pk]
    root = text(viewer.get("/messages/", {"queue": queue, "vhost": "/"}))
    assert row_ids(root) == [made["/"].pk]


def test_a_bad_vhost_filter_is_a_clear_400(viewer, estate):
    response = viewer.get("/messages/", {"vhost": "a\x00b"})
    assert response.status_code == 400
    assert "must not contain NUL characters" in response.content.decode()


def test_a_hostile_vhost_is_escaped_everywhere(viewer, operator, unique):
    vhost = f'<script>alert("{unique}")</script>'
    message = make_message(queue=f"{unique}.dlq", vhost=vhost, died_in="<b>died</b>")
    pages = [
        viewer.get("/messages/"),
        viewer.get(f"/messages/{message.pk}/"),
        viewer.get("/"),
        viewer.get("/groups/", {"window": "all"}),
        operator.get("/bulk/review/", {"action": "discard", "id": message.pk}),
    ]
    for response in pages:
        page = text(response)
        assert "<script>alert" not in page and "<b>died</b>" not in page
    assert "&lt;script&gt;alert(&quot;" in text(viewer.get("/messages/"))


def test_a_message_page_qualifies_its_queues(viewer, estate, unique):
    queue, made = estate
    page = text(viewer.get(f"/messages/{made['slashed'].pk}/"))
    assert (
        f'<dd id="queue">{unique}%2Fa%2Fb/{queue} <span class="muted">(vhost {unique}/a/b)' in page
    )
    assert f"<dd>{unique}%2Fa%2Fb/shipments</dd>" in page  # the failed queue, same vhost
    page = text(viewer.get(f"/messages/{made['/'].pk}/"))
    assert f'<dd id="queue">{queue} <span class="muted">(vhost /)' in page


def test_the_overview_qualifies_queues_and_links_their_vhost(viewer, estate, unique):
    queue, _ = estate
    page = text(viewer.get("/"))
    assert f">{unique}-billing/{queue}</a>" in page
    assert f">{unique}%2Fa%2Fb/{queue}</a>" in page
    assert f"?queue={queue}&amp;vhost={unique}-billing" in page
    assert f"?queue={queue}&amp;vhost={unique}%2Fa%2Fb" in page
    assert f"?queue={queue}&amp;vhost=%2F" in page


def test_the_groups_page_filters_by_vhost_and_qualifies_samples(viewer, estate, unique):
    queue, made = estate
    make_messages(2, queue=queue, vhost=f"{unique}-billing", died_in="invoices")
    page = shown(viewer.get("/groups/", {"window": "all", "vhost": f"{unique}-billing"}))
    assert f'in <span class="type-name">{unique}-billing/{queue}</span>' in page
    assert "rejected in invoices" in page  # its name: how and where it died
    assert made["billing"].group in page
    assert made["/"].group not in page and made["slashed"].group not in page
    # A group is of one vhost: its link is its own page.
    assert f'href="/groups/{made["billing"].group}/"' in page

    page = shown(viewer.get("/groups/", {"window": "all", "vhost": f"{unique}/a/b"}))
    assert (
        f'in <span class="type-name">{unique}%2Fa%2Fb/{queue}</span>' in page
        and made["slashed"].group in page
    )
    assert made["billing"].group not in page


def test_a_failure_group_never_mixes_vhosts(estate):
    _, made = estate
    same = make_message(queue=made["/"].queue, vhost="/", died_in="invoices")
    other = make_message(queue=made["/"].queue, vhost=made["billing"].vhost, died_in="invoices")
    assert same.group != other.group == made["billing"].group


def test_the_audit_log_names_the_queues_of_its_messages(viewer, estate, unique):
    queue, made = estate
    ids = [made["billing"].pk, made["slashed"].pk, made["/"].pk]
    entry = audit.record("tests", AuditAction.DISCARD, "cleanup", message_ids=ids)
    page = text(viewer.get("/audit/"))
    row = re.search(rf'<tr id="audit-{entry.pk}"[^>]*>(.*?)</tr>', page, re.S).group(1)
    shown = sorted([queue, f"{unique}%2Fa%2Fb/{queue}", f"{unique}-billing/{queue}"])
    assert f'<div class="muted">in {", ".join(shown)}</div>' in row


def test_the_bulk_review_qualifies_queues(operator, estate, unique):
    queue, made = estate
    params = {"action": "discard", "id": [made["billing"].pk]}
    page = text(operator.get("/bulk/review/", params))
    assert f"<td>{unique}-billing/{queue}</td>" in page
