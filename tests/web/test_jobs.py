"""The jobs pages: a job that finished with failed messages says so (words, badge colour, a
bar with the failed part), and its page groups the failures by error; the API's status
stays "done", as the contract says."""

import re

import pytest

from dlq.jobs import control, running
from dlq.models.actions import JobStatus
from tests.factories import client_for, make_messages, make_user
from tests.uiops import body

pytestmark = pytest.mark.django_db(transaction=True)  # the job runs with several connections


def _job_done_with_failures(top):
    """26 messages replayed to the queues where they failed: 2 arrive, 24 are unroutable
    (their queue is gone), one of those could not be published at all."""
    work, park = top.queue("work"), top.name("dlq")
    make_messages(2, queue=park, died_in=work, exchange="", routing_key=work)
    gone = make_messages(23, queue=park, died_in=top.name("gone"))
    lost = make_messages(1, queue=park, died_in="")
    job = control.create_job("frank", "replay", filters={"queue": park}, target="failed_queue",
                          reason="consumer fixed")  # fmt: skip
    assert running.run_job(job.pk) == JobStatus.DONE
    job.refresh_from_db()
    assert (job.done, job.failed) == (2, 24)
    return job, gone, lost


def test_a_job_done_with_failures_says_so_and_groups_them(top, viewer):
    job, gone, lost = _job_done_with_failures(top)

    page = body(viewer.get(f"/jobs/{job.pk}/"))

    assert '<span class="badge badge-done-failures">done with failures</span>' in page
    assert '<span class="badge badge-done">' not in page
    # The target in the words of the button that started it.
    assert "<dt>Target</dt><dd>The queue where it failed</dd>" in page
    assert "26 of 26 settled (2 done, 24 failed)" in page
    assert re.search(r'class="bar-done" width="7\.69"', page)  # 2 of 26
    assert re.search(r'class="bar-failed" x="7\.69" width="92\.31"', page)  # 24 of 26
    groups = re.findall(r'<td class="num">(\d+)</td>\s*<td>(.*?)</td></tr>', page, re.S)
    assert [count for count, _ in groups] == ["23", "1"]
    assert "no queue bound: 312 NO_ROUTE" in page
    examples = re.findall(r'href="/messages/(\d+)/"', groups[0][1])
    assert examples == [str(m.pk) for m in gone[:5]] and groups[0][1].endswith(", …")
    assert re.findall(r'href="/messages/(\d+)/"', groups[1][1]) == [str(lost[0].pk)]

    listed = body(viewer.get("/jobs/"))
    assert '<span class="badge badge-done-failures">done with failures</span>' in listed
    api = client_for(make_user("viewer"), token=True).get(f"/api/v1/jobs/{job.pk}").json()
    assert (api["status"], api["done"], api["failed"]) == ("done", 2, 24)


def test_a_job_done_without_failures_is_plainly_done(top, viewer):
    work, park = top.queue("work"), top.name("dlq")
    make_messages(3, queue=park, died_in=work, exchange="", routing_key=work)
    job = control.create_job("frank", "replay", filters={"queue": park}, target="failed_queue",
                          reason="consumer fixed")  # fmt: skip
    running.run_job(job.pk)

    page = body(viewer.get(f"/jobs/{job.pk}/"))

    assert '<span class="badge badge-done">done</span>' in page
    assert "with failures" not in page
    assert re.search(r'class="bar-failed" x="100\.00" width="0\.00"', page)
    assert '<tr><td colspan="4">None.</td></tr>' in page
