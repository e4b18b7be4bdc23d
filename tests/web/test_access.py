"""The ops pages at their permission edges: anonymous users go to the login page, a user
without a role gets 403, viewers read but never act (no buttons, and forged POSTs are
refused server-side), operators act; CSRF on every POST."""

import pytest
from django.test import Client

from dlq.models import Message, Status
from dlq.models.actions import AuditEntry, Job, JobStatus
from tests.factories import client_for, make_messages, make_user, post
from tests.uiops import a_job, body, review_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def job():
    return a_job([m.pk for m in make_messages(2, queue="access.dlq")])


def read_urls(job: Job) -> list[str]:
    return ["/", "/groups/", "/jobs/", f"/jobs/{job.pk}/", "/audit/", "/audit/?format=csv"]


def test_it_sends_anonymous_users_to_the_login_page(job):
    client = Client()
    for url in [*read_urls(job), review_url("discard", all=1)]:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/login/?next="), url
    for url in (review_url("discard", id=1), f"/jobs/{job.pk}/cancel/"):
        assert client.post(url, {"reason": "forged"})["Location"].startswith("/login/")
    job.refresh_from_db()
    assert (job.status, job.cancel_requested, Job.objects.count()) == ("pending", False, 1)


def test_it_refuses_users_without_a_role(job):
    client = client_for(make_user(None))
    for url in read_urls(job):
        assert client.get(url).status_code == 403, url


@pytest.mark.parametrize("url_of", [lambda job: f"/jobs/{job.pk}/", lambda job: "/groups/"])
def test_viewers_read_the_pages_without_action_buttons(job, url_of):
    viewer = client_for(make_user("viewer"))
    response = viewer.get(url_of(job))
    assert response.status_code == 200
    text = body(response)
    assert "Cancel job" not in text and "Replay group" not in text
    assert "Discard group" not in text and "/bulk/review/" not in text


def test_operators_see_the_action_buttons(job):
    operator = client_for(make_user("operator"))
    assert "Cancel job" in body(operator.get(f"/jobs/{job.pk}/"))
    groups = body(operator.get("/groups/"))
    assert "Replay group" in groups and "Discard group" in groups


def test_viewers_cannot_review_create_or_cancel_jobs(job):
    viewer = client_for(make_user("viewer"))
    ids = [m.pk for m in Message.objects.all()]
    assert viewer.get(review_url("replay", all=1)).status_code == 403
    created = post(viewer, review_url("discard", id=ids[0]), {"reason": "forged"})
    cancelled = post(viewer, f"/jobs/{job.pk}/cancel/")
    assert (created.status_code, cancelled.status_code) == (403, 403)
    assert "needs the operator role" in body(cancelled)
    job.refresh_from_db()
    assert (job.status, job.cancel_requested, Job.objects.count()) == ("pending", False, 1)
    assert set(Message.objects.values_list("status", flat=True)) == {Status.PARKED}


def test_it_refuses_a_post_without_the_csrf_token(job):
    operator = client_for(make_user("operator"))  # enforces CSRF checks
    response = operator.post(f"/jobs/{job.pk}/cancel/")
    assert response.status_code == 403 and "CSRF" in body(response)
    response = operator.post(review_url("discard", id=1), {"reason": "no token"})
    assert response.status_code == 403
    assert Job.objects.count() == 1


def test_an_operator_cancels_a_pending_job_once(job):
    operator = client_for(make_user("operator"))

    response = post(operator, f"/jobs/{job.pk}/cancel/", follow=True)

    assert f"Job {job.pk}: cancel requested." in body(response)
    job.refresh_from_db()
    assert (job.status, job.cancel_requested) == (JobStatus.CANCELLED, True)
    again = post(operator, f"/jobs/{job.pk}/cancel/", follow=True)
    assert f"Job {job.pk} is cancelled already: nothing to stop." in body(again)
    assert AuditEntry.objects.filter(action="job_cancel", job_id=job.pk).count() == 1
    assert operator.get(f"/jobs/{job.pk}/cancel/").status_code == 405


def test_it_answers_404_for_an_unknown_job():
    viewer = client_for(make_user("viewer"))
    assert viewer.get("/jobs/987654321/").status_code == 404
