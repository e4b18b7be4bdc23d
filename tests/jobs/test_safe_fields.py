"""Safe replay's fields through the API (validation, the contract's defaults, the job's
answer), and the consumer gate's words for what it cannot see: a route to no queue, a
management API that does not answer. The turns here are run in the test's process, as a
worker would run them; tests/jobs/test_safe_replay.py runs them on a real worker."""

import pytest

from dlq.jobs import control, running, steps
from dlq.models.actions import Job, JobStatus, Replay
from tests.factories import client_for, make_messages, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator():
    return client_for(make_user("operator"), token=True)


def _create(client, body):
    return client.post("/api/v1/jobs", body, content_type="application/json")


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"canary": 0}, "canary"),
        ({"canary": 1.5}, "canary"),
        ({"ramp": 1}, "ramp"),
        ({"ramp": 0.5}, "ramp"),
        ({"watch_seconds": -1}, "watch_seconds"),
        ({"max_returns": -1}, "max_returns"),
        ({"require_consumers": "maybe"}, "require_consumers"),
    ],
)
def test_it_refuses_a_bad_safe_replay_field(operator, started, extra, field):
    body = {"action": "replay", "ids": [1], "reason": "r", **extra}
    response = _create(operator, body)
    assert response.status_code == 400, response.content
    assert set(response.json()["errors"]) == {field}
    assert not Job.objects.exists() and started == []


def test_a_discard_takes_no_canary(operator, started):
    message = make_messages(1)[0]
    response = _create(operator, {"action": "discard", "ids": [message.pk], "reason": "r",
                                  "canary": 5})  # fmt: skip
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "action": ["a canary, returns and the consumer gate are for a replay"]
    }


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        # No canary: one step of everything, no limit on returns, consumers required.
        ({}, (None, 2.0, 30, None, True)),
        # A canary: nothing may come back unless the operator says so.
        ({"canary": 10}, (10, 2.0, 30, 0, True)),
        ({"canary": 10, "max_returns": None}, (10, 2.0, 30, None, True)),
        (
            {"canary": 3, "ramp": 1.5, "watch_seconds": 0, "max_returns": 2},
            (3, 1.5, 0, 2, True),
        ),  # fmt: skip
        ({"target": "failed_queue", "require_consumers": False}, (None, 2.0, 30, None, False)),
        # A custom target: the operator knows where it goes; no gate unless asked.
        ({"target": {"exchange": "", "routing_key": "q"}}, (None, 2.0, 30, None, False)),
    ],
)
def test_it_fills_in_the_contracts_defaults(operator, started, extra, expected):
    message = make_messages(1)[0]
    response = _create(operator, {"action": "replay", "ids": [message.pk], "reason": "r",
                                  **extra})  # fmt: skip
    assert response.status_code == 202, response.content
    job = response.json()
    fields = ("canary", "ramp", "watch_seconds", "max_returns", "require_consumers")
    assert tuple(job[f] for f in fields) == expected
    assert (job["status"], job["step"], job["returned"], job["status_detail"]) == (
        "pending", 0, 0, "")  # fmt: skip


def test_steps_grow_by_the_ramp_up_to_the_total():
    job = Job(canary=10, ramp=2.0, total=100)
    assert [steps.step_end(job, k) for k in range(6)] == [0, 10, 30, 70, 100, 100]
    job = Job(canary=1, ramp=1.1, total=5)  # a ramp that rounds to the same size grows by one
    assert [steps.step_end(job, k) for k in range(5)] == [0, 1, 3, 5, 5]
    assert steps.step_end(Job(canary=None, total=7), 1) == 7


@pytest.mark.django_db(transaction=True)
def test_a_route_to_no_queue_waits_and_says_so_and_publishes_nothing(top):
    nowhere = top.exchange("nowhere", "direct")
    messages = make_messages(3, queue=top.name("dlq"))
    job = control.create_job("grace", "replay", ids=[m.pk for m in messages],
                             target={"exchange": nowhere, "routing_key": "k"}, reason="r",
                             require_consumers=True)  # fmt: skip

    assert running.run_job(job.pk) == JobStatus.WAITING
    job.refresh_from_db()
    assert job.status_detail == (
        f"exchange {nowhere!r} routes 'k' to no queue: nothing would receive the replay"
    )
    assert job.step == 0 and not Replay.objects.filter(job=job).exists()
    # Its next turn is the one task that carries its wake time; another is not its turn.
    assert running.run_job(job.pk) == "not due"
    assert running.run_job(job.pk, due=job.wake_at) == JobStatus.WAITING

    control.cancel_job(job.pk, "grace")  # a waiting job ends at once
    job.refresh_from_db()
    assert job.status == JobStatus.CANCELLED and job.finished_at is not None
    assert running.run_job(job.pk, due=job.wake_at) == JobStatus.CANCELLED


@pytest.mark.django_db(transaction=True)
def test_a_management_api_that_does_not_answer_keeps_the_job_waiting(top, settings):
    work = top.queue("work")
    messages = make_messages(2, queue=top.name("dlq"), died_in=work)
    job = control.create_job("grace", "replay", ids=[m.pk for m in messages],
                             target="failed_queue", reason="r", require_consumers=True)  # fmt: skip
    settings.DLQ_MANAGEMENT_URL = "http://guest:guest@127.0.0.1:9"  # nothing listens

    assert running.run_job(job.pk) == JobStatus.WAITING
    job.refresh_from_db()
    assert job.status_detail.startswith(
        "the management API did not answer, so consumers are unknown: management API unreachable"
    )
    assert not Replay.objects.filter(job=job).exists()
