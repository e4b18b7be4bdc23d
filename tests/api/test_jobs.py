"""Bulk jobs through the API: 202 and a start after commit, progress, cancel, bad input.

The endpoint hands the job to dlq.jobtasks.start once the transaction commits; here a
recorder stands in for the Celery hand-off and the test runs running.run_job itself, as a
worker would (the broker and the database are real). A running job works with several
database connections (dlq/jobs/control.py), so the tests that run one commit (RUNS_JOBS)."""

from datetime import UTC, datetime

import pytest

from dlq.jobs import running
from dlq.models import Message, Status
from dlq.models.actions import AuditEntry, Job
from tests.factories import client_for, make_messages, make_user
from tests.topology import depth, wait_depth

pytestmark = pytest.mark.django_db
RUNS_JOBS = pytest.mark.django_db(transaction=True)


@pytest.fixture
def operator():
    return client_for(make_user("operator"), token=True)


def _create(client, body, **extra):
    return client.post("/api/v1/jobs", body, content_type="application/json", **extra)


def _poll(client, job_id, until=("done", "cancelled", "failed"), tries=50) -> dict:
    for _ in range(tries):
        job = client.get(f"/api/v1/jobs/{job_id}").json()
        if job["status"] in until:
            return job
        running.run_job(job_id)  # the worker's turn
    raise AssertionError(f"job {job_id} never finished: {job}")


@RUNS_JOBS
def test_it_replays_by_filter_and_shows_progress(channel, top, operator, started):
    work, park = top.queue("work"), top.name("dlq")
    make_messages(5, queue=park, died_in=work, exchange="", routing_key=work)
    make_messages(2, queue=top.name("elsewhere"), died_in=work)  # outside the filter
    body = {"action": "replay", "filter": {"queue": park}, "target": "failed_queue",
            "rate_per_s": None, "reason": "consumer fixed",
            "require_consumers": False}  # fmt: skip

    response = _create(operator, body, headers={"X-Request-ID": "bulk-1"})

    assert response.status_code == 202
    job = response.json()
    assert (job["action"], job["status"], job["total"], job["done"]) == ("replay", "pending", 5, 0)
    assert job["filter"] == {"queue": park}
    assert job["target"] == "failed_queue"
    assert job["created_by"].startswith("operator-")
    assert started == [job["id"]]  # handed to a worker once committed
    viewer = client_for(make_user("viewer"), token=True)
    finished = _poll(viewer, job["id"])
    assert finished["status"] == "done"
    assert (finished["total"], finished["done"], finished["failed"]) == (5, 5, 0)
    assert finished["outcomes"] == {"confirmed": 5}
    wait_depth(channel, work, 5)
    assert depth(channel, work) == 5
    assert set(Message.objects.filter(queue=park).values_list("status", flat=True)) == {
        Status.REPLAYED
    }
    entry = AuditEntry.objects.get(action="job_create")
    assert (entry.job_id, entry.request_id) == (job["id"], "bulk-1")


@RUNS_JOBS
def test_it_discards_by_ids_and_counts_what_it_skipped(operator, started):
    first, second, third = make_messages(3)
    Message.objects.filter(pk=third.pk).update(status=Status.REPLAYED)
    body = {"action": "discard", "ids": [first.pk, second.pk, third.pk], "reason": "junk"}

    response = _create(operator, body)

    assert response.status_code == 202
    job = _poll(operator, response.json()["id"])
    assert (job["status"], job["done"], job["failed"]) == ("done", 2, 1)
    assert job["outcomes"] == {"discarded": 2, "skipped": 1}
    assert job["target"] is None


@RUNS_JOBS
def test_it_freezes_a_filter_at_creation(operator, started):
    make_messages(2, queue="frozen.dlq")
    response = _create(operator, {"action": "discard", "filter": {"queue": "frozen.dlq"},
                                  "reason": "old ones"})  # fmt: skip
    make_messages(3, queue="frozen.dlq")  # after the job was created
    job = _poll(operator, response.json()["id"])
    assert (job["total"], job["done"]) == (2, 2)
    assert Message.objects.filter(queue="frozen.dlq", status=Status.PARKED).count() == 3


def test_it_cancels_a_pending_job_and_a_second_cancel_changes_nothing(operator, started):
    messages = make_messages(3)
    body = {"action": "discard", "ids": [m.pk for m in messages], "reason": "bulk"}
    job_id = _create(operator, body).json()["id"]

    response = operator.post(f"/api/v1/jobs/{job_id}/cancel")

    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"
    assert response.json()["cancel_requested"] is True
    assert running.run_job(job_id) == "cancelled"  # a worker that comes late does nothing
    assert Message.objects.filter(status=Status.PARKED).count() == 3
    again = operator.post(f"/api/v1/jobs/{job_id}/cancel")  # a second click: no error
    assert again.status_code == 200
    assert (again.json()["status"], again.json()["finished_at"]) == (
        "cancelled", response.json()["finished_at"])  # fmt: skip
    assert AuditEntry.objects.filter(action="job_cancel", job_id=job_id).count() == 1


@RUNS_JOBS
def test_it_cancels_a_running_job_and_its_worker_stops(operator, started):
    messages = make_messages(3)
    job_id = _create(operator, {"action": "discard", "ids": [m.pk for m in messages],
                                "reason": "bulk"}).json()["id"]  # fmt: skip
    assert running.claim_job(job_id)  # a worker has taken it

    response = operator.post(f"/api/v1/jobs/{job_id}/cancel")

    assert response.status_code == 200
    assert (response.json()["status"], response.json()["cancel_requested"]) == ("running", True)
    # That worker died before its first batch; the next one settles the cancel.
    Job.objects.filter(pk=job_id).update(heartbeat_at=datetime(2000, 1, 1, tzinfo=UTC))
    assert running.run_job(job_id) == "cancelled"
    job = operator.get(f"/api/v1/jobs/{job_id}").json()
    assert (job["status"], job["done"], job["finished_at"] is not None) == ("cancelled", 0, True)
    assert Message.objects.filter(status=Status.PARKED).count() == 3


@RUNS_JOBS
def test_it_answers_409_to_a_cancel_of_a_finished_job(operator, started):
    job_id = _create(operator, {"action": "discard", "ids": [make_messages(1)[0].pk],
                                "reason": "r"}).json()["id"]  # fmt: skip
    _poll(operator, job_id)
    response = operator.post(f"/api/v1/jobs/{job_id}/cancel")
    assert response.status_code == 409
    assert response.json() == {"detail": f"job {job_id} is done; it cannot be cancelled"}


@pytest.mark.parametrize("stopped", ["aborted", "failed"])
def test_a_cancel_of_a_stopped_job_answers_it_unchanged(operator, started, stopped):
    job_id = _create(operator, {"action": "discard", "ids": [make_messages(1)[0].pk],
                                "reason": "r"}).json()["id"]  # fmt: skip
    Job.objects.filter(pk=job_id).update(status=stopped, status_detail="why it stopped")

    response = operator.post(f"/api/v1/jobs/{job_id}/cancel")

    assert response.status_code == 200
    assert (response.json()["status"], response.json()["status_detail"]) == (
        stopped, "why it stopped")  # fmt: skip
    assert not AuditEntry.objects.filter(action="job_cancel", job_id=job_id).exists()


def test_it_answers_404_to_an_unknown_job(operator):
    assert operator.get("/api/v1/jobs/987654321").status_code == 404
    assert operator.get("/api/v1/jobs/987654321").json() == {"detail": "no job 987654321"}
    response = operator.post("/api/v1/jobs/987654321/cancel")
    assert response.status_code == 404
    assert response.json() == {"detail": "job 987654321 does not exist"}


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        ({"action": "delete", "ids": [1], "reason": "r"}, {"action"}),
        ({"action": "discard", "reason": "r"}, {"ids"}),
        ({"action": "discard", "ids": [1], "filter": {"status": "parked"}, "reason": "r"}, {"ids"}),
        ({"action": "discard", "ids": [], "reason": "r"}, {"ids"}),
        ({"action": "discard", "ids": [0, "x"], "reason": "r"}, {"ids.0", "ids.1"}),
        (
            {
                "action": "discard",
                "filter": {"status": "lost", "received_after": "yesterday"},
                "reason": "r",
            },
            {"filter.status", "filter.received_after"},
        ),
        ({"action": "discard", "filter": {"queue": "a\x00"}, "reason": "r"}, {"filter.queue"}),
        # Dropped, these would select every parked message.
        (
            {"action": "replay", "filter": {"queues": "orders.dlq"}, "reason": "r"},
            {"filter.queues"},
        ),
        ({"action": "replay", "filter": {"queue": ""}, "reason": "r"}, {"filter"}),
        (
            {"action": "replay", "filter": {"queue": " ", "status": "parked"}, "reason": "r"},
            {"filter"},
        ),
        ({"action": "discard", "filter": {}, "reason": "r"}, {"filter"}),
        ({"action": "discard", "filter": {"queue": None}, "reason": "r"}, {"filter"}),
        ({"action": "replay", "ids": [1], "target": "sideways", "reason": "r"}, {"target"}),
        ({"action": "replay", "ids": [1], "rate_per_s": 0, "reason": "r"}, {"rate_per_s"}),
        ({"action": "replay", "ids": [1]}, {"reason"}),
        ({"action": "replay", "ids": [1], "reason": "  "}, {"reason"}),
    ],
)
def test_it_refuses_a_bad_job_field_by_field(operator, started, body, errors):
    response = _create(operator, body)
    assert response.status_code == 400
    assert response.json()["detail"] == "invalid input"
    assert set(response.json()["errors"]) == errors
    assert not Job.objects.exists() and started == []


def test_it_refuses_a_job_that_selects_no_parked_message(operator, started):
    """As the bulk review does: unknown ids, ids of messages no longer parked, and a filter
    that matches nothing would each make an empty job."""
    replayed = make_messages(1, queue="some.dlq")[0]
    Message.objects.filter(pk=replayed.pk).update(status=Status.REPLAYED)
    nothing = "no parked message is selected: nothing to do"
    for selection, field in [
        ({"ids": [987654321, 987654322]}, "ids"),
        ({"ids": [replayed.pk]}, "ids"),
        ({"filter": {"queue": "some.dlq"}}, "filter"),
        ({"filter": {"queue": "nothing.here"}}, "filter"),
    ]:
        response = _create(operator, {"action": "replay", **selection, "reason": "r"})
        assert response.status_code == 400
        assert response.json() == {"detail": "invalid input", "errors": {field: [nothing]}}
    assert not Job.objects.exists() and not AuditEntry.objects.exists() and started == []


def test_it_validates_the_filter_like_the_list(operator, started):
    response = _create(operator, {"action": "discard", "reason": "r",
                                  "filter": {"received_before": "2025-13-01"}})  # fmt: skip
    listed = operator.get("/api/v1/messages", {"received_before": "2025-13-01"})
    expected = listed.json()["errors"]["received_before"]
    assert response.json()["errors"]["filter.received_before"] == expected
