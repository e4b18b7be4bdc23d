"""The pages of a job that cannot succeed (issue 28, point 6): the bulk review asks for a
second confirmation when its sampled routes fail; a paused job's page offers Resume, and a
job with failed messages offers to retry exactly those. The real broker decides the routes;
the jobs run in process (run_job, as the worker runs them)."""

import html
import json

import pytest

from dlq.jobs import control, running
from dlq.models.actions import AuditAction, AuditEntry, ItemState, Job, JobStatus
from dlq.tasks import jobs as job_tasks
from tests.factories import client_for, make_messages, make_user, post
from tests.uiops import body, review_url
from tests.web.test_bulk import replay_to
from tests.web.test_bulk import words as _words

pytestmark = pytest.mark.django_db(transaction=True)  # the job runs with several connections


def words(text: str) -> str:
    return html.unescape(_words(text))


def _url(messages) -> str:
    return review_url("replay", id=messages[0].pk) + "".join(f"&id={m.pk}" for m in messages[1:])


def test_replaying_a_selection_whose_sampled_routes_fail_needs_a_second_confirmation(
    operator, top, started
):
    messages = make_messages(3, queue=top.name("dlq"))
    missing = top.name("payments")
    target = replay_to("custom", exchange=missing, routing_key="pay")
    url = _url(messages)

    review = words(body(operator.get(f"{url}&replay-target=custom&replay-exchange={missing}"
                                     "&replay-routing_key=pay")))  # fmt: skip
    said = f"exchange '{missing}' does not exist: replay would fail"
    assert f"Replay anyway although 3 of 3 sampled routes fail: {said}" in review

    refused = post(operator, url, {**target, "reason": "fix deployed"})
    assert refused.status_code == 400
    assert "3 of the 3 sampled routes fail: confirm that you replay anyway" in body(refused)
    assert not Job.objects.exists() and started == []

    confirmed = post(operator, url, {**target, "reason": "fix deployed", "replay_failing": "on"})
    assert confirmed.status_code == 302
    assert started == [Job.objects.get().pk]


def test_a_selection_whose_routes_work_confirms_in_one_click(operator, top, started):
    work = top.queue("work")
    messages = make_messages(2, queue=top.name("dlq"), died_in=work, exchange="", routing_key=work)

    review = body(operator.get(_url(messages) + "&replay-target=failed_queue"))
    response = post(operator, _url(messages), {**replay_to("failed_queue"), "reason": "fixed"})

    assert "Replay anyway although" not in review
    assert response.status_code == 302 and len(started) == 1


def _paused(top, settings) -> Job:
    settings.DLQ_JOB_PAUSE_AFTER_ERRORS = 2
    messages = make_messages(4, queue=top.name("dlq"))
    target = {"exchange": top.name("nowhere"), "routing_key": "k"}
    job = control.create_job("grace", "replay", ids=[m.pk for m in messages], target=target,
                             reason="first try")  # fmt: skip
    assert running.run_job(job.pk) == JobStatus.WAITING
    return Job.objects.get(pk=job.pk)


def test_a_paused_jobs_page_offers_resume_to_an_operator(top, settings, operator, viewer,
                                                         monkeypatch):  # fmt: skip
    job = _paused(top, settings)
    resumed = []
    monkeypatch.setattr(job_tasks, "resume", lambda j: resumed.append((j.pk, j.wake_at)))

    shown = words(body(operator.get(f"/jobs/{job.pk}/")))
    assert "paused" in shown and "paused after 2 identical errors: NOT_FOUND" in shown
    assert "Resume job" in shown and "Retry the 2 failed" in shown
    seen = body(viewer.get(f"/jobs/{job.pk}/"))
    assert "Resume job" not in seen and "Retry the" not in seen

    response = post(operator, f"/jobs/{job.pk}/resume/", follow=True)

    assert f"Job {job.pk} resumed." in body(response)
    job.refresh_from_db()
    assert resumed == [(job.pk, job.wake_at)] and not job.paused
    entry = AuditEntry.objects.get(action=AuditAction.JOB_RESUME, job_id=job.pk)
    assert json.loads(entry.detail)["paused"].startswith("paused after 2 identical errors")
    trail = words(body(operator.get(f"/audit/?job={job.pk}")))
    assert f"resumed job {job.pk} (paused after 2 identical errors: NOT_FOUND" in trail


def test_retrying_the_failed_needs_a_reason_and_makes_a_job_of_exactly_those(
    top, settings, started
):
    job = _paused(top, settings)
    operator = client_for(make_user("operator"))
    failed = set(job.items.filter(state=ItemState.FAILED).values_list("message_id", flat=True))

    blank = post(operator, f"/jobs/{job.pk}/retry-failed/", {"reason": "  "})
    assert blank.status_code == 400 and "a reason is required" in body(blank)
    assert Job.objects.count() == 1

    response = post(operator, f"/jobs/{job.pk}/retry-failed/", {"reason": "exchange made"})

    retry = Job.objects.exclude(pk=job.pk).get()
    assert response.status_code == 302 and response["Location"] == f"/jobs/{retry.pk}/"
    assert set(retry.items.values_list("message_id", flat=True)) == failed and len(failed) == 2
    assert (retry.target, retry.reason, started) == (job.target, "exchange made", [retry.pk])
    trail = words(body(operator.get(f"/audit/?job={retry.pk}")))
    assert f"the failed of job {job.pk}: job {retry.pk}" in trail
