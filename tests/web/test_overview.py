"""The overview, the failure groups and the jobs list through the test client: counts per
queue and per hour, the SVG chart (labels escaped), top groups, running jobs, recent
actions; times as <time> in UTC for the browser to localise."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from dlq.actions import message as message_actions
from dlq.models.actions import Job, JobStatus
from dlq.web import charts
from tests.factories import client_for, make_messages, make_user
from tests.uiops import a_job, body

pytestmark = pytest.mark.django_db


def row_of(text: str, label: str) -> list[str]:
    """The cells of the table row whose first cell shows `label` (a group's cell shows its
    name and its fingerprint)."""
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", text, re.S):
        cells = [
            re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        if cells and (cells[0] == label or label in cells[0].split()):
            return cells
    raise AssertionError(f"no row for {label}")


def test_the_overview_counts_arrivals_per_queue(viewer):
    now = timezone.now()
    make_messages(3, queue="orders.dlq")
    make_messages(2, queue="orders.dlq", received_at=now - timedelta(hours=3))
    make_messages(4, queue="orders.dlq", received_at=now - timedelta(days=2))
    make_messages(1, queue="billing.dlq", received_at=now - timedelta(minutes=90))
    discarded = make_messages(1, queue="billing.dlq")[0]
    message_actions.discard(discarded.pk, "tests", "junk")

    text = body(viewer.get("/"))

    # queue, vhost, type, parked, last hour, last day, depth (no such queue: ?), last arrival
    assert row_of(text, "orders.dlq")[3:7] == ["9", "3", "5", "?"]
    assert row_of(text, "billing.dlq")[3:6] == ["1", "1", "2"]
    assert '<svg class="chart"' in text and 'role="img"' in text
    assert "orders.dlq: 5; billing.dlq: 2" in text  # the chart's text description


def test_the_overview_shows_top_groups_running_jobs_and_recent_actions(viewer):
    messages = make_messages(4, queue="orders.dlq", reason="expired")
    message_actions.discard(messages[0].pk, "alice", "a duplicate")
    job = a_job([messages[1].pk])
    done = a_job([messages[2].pk])
    Job.objects.filter(pk=done.pk).update(status=JobStatus.DONE)

    text = body(viewer.get("/"))

    assert row_of(text, messages[1].group)[2] == "3"  # parked in that group
    assert f'href="/jobs/{job.pk}/"' in text and f'href="/jobs/{done.pk}/"' not in text
    assert "a duplicate" in text and "alice" in text
    assert re.search(r'<time datetime="[^"]+" title="[\d-]+ [\d:]+ UTC">', text)


def test_the_chart_escapes_queue_names_and_describes_itself():
    now = timezone.now().replace(minute=30)
    buckets = [now - timedelta(hours=n) for n in range(23, -1, -1)]
    svg = str(charts.arrivals_chart(buckets, {'<script>alert("q")</script>': [1] * 24}))
    assert "<script>" not in svg
    assert "&lt;script&gt;alert(&quot;q&quot;)&lt;/script&gt;: 24" in svg
    assert '<title id="arrivals-title">' in svg and 'aria-labelledby="arrivals-title' in svg
    assert "No arrivals" in str(charts.arrivals_chart(buckets, {}))


def test_the_overview_escapes_queue_names(viewer):
    make_messages(1, queue="<img src=x onerror=alert(1)>.dlq")
    text = body(viewer.get("/"))
    assert "<img src=x" not in text and "&lt;img src=x onerror=alert(1)&gt;.dlq" in text


def test_groups_are_counted_over_all_time_and_linked(viewer):
    old = timezone.now() - timedelta(days=3)
    timeouts = make_messages(3, queue="orders.dlq", reason="expired", received_at=old)
    make_messages(2, queue="orders.dlq", reason="expired")
    rejected = make_messages(1, queue="orders.dlq", reason="rejected")[0]

    text = body(viewer.get("/groups/?queue=orders.dlq"))

    group = timeouts[0].group
    assert row_of(text, "expired")[1] == "5"  # the worklist: every parked one, however old
    assert row_of(text, "rejected")[1] == "1"
    assert row_of(text, "expired")[3] == "new"
    assert f'href="/groups/{group}/"' in text  # the group's page (issue 26, point 4)
    assert rejected.group not in body(viewer.get("/groups/?queue=billing.dlq"))
    assert viewer.get("/groups/?state=forever").status_code == 400


def test_groups_are_named_by_what_failed_and_filtered(viewer):
    typed = make_messages(
        2, queue="orders.dlq", vhost="sales", received_at=timezone.now(),
        headers={"MT-Fault-ExceptionType": "System.InvalidOperationException",
                 "MT-Fault-Message": "Stock is <negative>\nat Line 2",
                 "MT-Fault-MessageType": "Sales.SubmitInvoice"},
    )[0]  # fmt: skip
    plain = make_messages(1, queue="billing.dlq", died_in="billing", reason="expired")[0]

    text = body(viewer.get("/groups/"))

    name = (
        "Sales.<wbr>SubmitInvoice · System.<wbr>InvalidOperationException:"
        " Stock is &lt;negative&gt;"
    )  # <wbr>: a name wraps at its dots
    assert f'class="group-name type-name">{name}</a>' in text
    assert 'class="group-name type-name">expired in billing</a>' in text
    assert typed.group not in re.sub(r"<[^>]+>", "", text)  # named, never a bare hash
    assert f'href="/groups/{typed.group}/" class="group-name' in text  # its own page
    for query, shown in [("vhost=sales", typed), ("queue=billing.dlq", plain)]:
        text = body(viewer.get(f"/groups/?{query}"))
        other = plain if shown is typed else typed
        assert shown.group in text and other.group not in text, query
    scoped = body(client_for(make_user("operator")).get("/groups/?vhost=sales"))
    assert f"group={typed.group}&amp;vhost=sales" in scoped  # a bulk action stays in the vhost
    detail = body(viewer.get(f"/messages/{typed.pk}/"))
    assert f'">{name.replace("<wbr>", "")}</a> <code class="muted"' in detail


def test_operators_get_bulk_links_for_a_whole_group(viewer):
    group = make_messages(2, queue="orders.dlq")[0].group
    text = body(client_for(make_user("operator")).get("/groups/"))
    assert (
        f'href="/bulk/review/?action=replay&amp;all=1&amp;status=parked&amp;group={group}"' in text
    )


def test_the_jobs_list_puts_running_jobs_first_and_pages(viewer):
    messages = make_messages(3)
    finished = [a_job([m.pk]) for m in messages[:2]]
    Job.objects.filter(pk__in=[j.pk for j in finished]).update(status=JobStatus.DONE)
    running = a_job([messages[2].pk])  # the newest: pending

    text = body(viewer.get("/jobs/"))

    running_at, finished_at = text.index("Running and pending"), text.index("Finished")
    assert running_at < text.index(f"Job {running.pk}<") < finished_at
    assert text.index(f"Job {finished[1].pk}<") < text.index(f"Job {finished[0].pk}<")
    assert viewer.get("/jobs/?cursor=nonsense").status_code == 400


def test_the_progress_fragment_polls_until_the_job_ends(viewer):
    job = a_job([m.pk for m in make_messages(4)])
    Job.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, done=1, failed=1)

    fragment = body(viewer.get(f"/jobs/{job.pk}/", headers={"HX-Request": "true"}))

    assert fragment.lstrip().startswith('<section id="progress"') and "<html" not in fragment
    assert f'hx-get="/jobs/{job.pk}/"' in fragment and 'hx-trigger="every 1500ms"' in fragment
    assert '<progress id="job-progress" max="4" value="2"' in fragment
    Job.objects.filter(pk=job.pk).update(status=JobStatus.DONE, done=3)
    finished = body(viewer.get(f"/jobs/{job.pk}/", headers={"HX-Request": "true"}))
    assert "hx-get" not in finished and "hx-trigger" not in finished  # polling stops
    assert "4 of 4 settled (3 done, 1 failed)" in finished
    announced = f'<div hx-swap-oob="innerHTML:#job-announce">Job {job.pk} done with failures: 4'
    assert announced in finished  # into the live region that stays in the page


def test_the_job_page_has_a_live_region_outside_the_polled_fragment(viewer):
    job = a_job([m.pk for m in make_messages(2)])
    page = body(viewer.get(f"/jobs/{job.pk}/"))
    region = '<p id="job-announce" class="visually-hidden" aria-live="polite" aria-atomic="true">'
    assert page.index(region) < page.index('<section id="progress"')
    assert "hx-swap-oob" not in page


@pytest.mark.parametrize(
    ("url", "link"),
    [("/groups/", "Groups"), ("/jobs/", "Jobs"), ("/audit/", "Audit"), ("/", "Overview")],
)
def test_the_menu_marks_the_current_page(viewer, url, link):
    text = body(viewer.get(url))
    current = re.findall(r'<a href="[^"]*" aria-current="page">([^<]+)</a>', text)
    assert current == [link]
