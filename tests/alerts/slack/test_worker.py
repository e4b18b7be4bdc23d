"""A Slack press end to end with a real Celery worker (tests/celeryworker.py): the console
answers Slack at once and the worker posts the updated alert to the response URL; a Canary's
job is taken by the worker and replays its canary of 10 to a real queue a real consumer
process reads."""

import json
import time

import pytest

from dlq.models import Job
from dlq.models.actions import JobStatus
from dlq.tasks import alerts as alert_tasks
from dlq.tasks import jobs as job_tasks
from tests.alertfactory import arrive
from tests.alerts.slack.conftest import group_of, linked, send_alerts
from tests.celeryworker import Worker
from tests.failingconsumer import Consumer
from tests.rabbits import only_on
from tests.slackapi import buttons

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def on_worker(slack, top, monkeypatch):
    """A worker on the test's own Celery queue; the console hands it Slack answers and jobs
    exactly as dlq.tasks does, only on that queue."""
    queue = top.celery_queue()
    running = Worker(queue)  # its environment lets it post to the stand-in on loopback
    running.wait_ready()
    answer, run = alert_tasks.slack_respond, job_tasks.run_job
    monkeypatch.setattr(alert_tasks, "respond", lambda *args: answer.apply_async(args, queue=queue))
    monkeypatch.setattr(job_tasks, "start", lambda job: run.apply_async((job.pk,), queue=queue))
    yield running
    running.stop()


def _said(reply: dict) -> str:
    """The context line an updated alert ends with: who did what."""
    return reply["blocks"][-1]["elements"][0]["text"]


def _until(predicate, what: str, worker: Worker, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while not (found := predicate()):
        assert time.monotonic() < deadline, f"{what}\n{worker.output()[-3000:]}"
        time.sleep(0.05)
    return found


@only_on("rabbitmq-3.10", "the answer goes through Celery's own transport, one for all tests")
def test_acknowledge_is_answered_at_once_and_the_worker_updates_the_alert(
    slack, alerted, live_server, on_worker
):
    oper = linked("operator", "U0OPER")
    url = slack.response_url()
    ref = buttons(alerted)[1]["dlq_ack"]["value"]

    answer = slack.press(live_server.url, slack.payload("dlq_ack", ref, response_url=url))

    assert answer.status == 200 and answer.seconds < 3
    [reply] = slack.wait_responses(1, timeout=30) or [None]
    assert reply is not None, on_worker.output()[-3000:]
    assert reply["replace_original"] is True
    assert _said(reply) == f"`{oper.username}` acknowledged `KeyError`"
    assert slack.server.requests[-1].path == url.removeprefix(slack.url)
    assert "dlq.tasks.slack_respond" in on_worker.output()
    assert "/respond/" not in on_worker.output()  # the response URL is never logged


def test_canary_is_taken_by_a_worker_and_replays_ten(slack, slack_channel, live_server, top,
                                                     rabbit, on_worker):  # fmt: skip
    work = top.queue("work")
    arrive(top.name("dlq"), 30, died_in=work, exception="PaymentDeclined")
    send_alerts()
    ref = buttons(slack.alerts()[0])[0]["dlq_canary"]["value"]
    consumer = Consumer(rabbit.url, work)
    linked("operator", "U0OPER")
    try:
        answer = slack.press(live_server.url, slack.payload("dlq_canary", ref))
        assert answer.status == 200 and answer.seconds < 3
        job = Job.objects.get()
        assert (job.canary, json.loads(job.filter_json)) == (10, {"group": group_of(ref)})
        _until(lambda: len(consumer.deliveries()) >= 10, "the canary reached the queue", on_worker)
        job = _until(lambda: Job.objects.filter(pk=job.pk, step=1, done=10).first(),
                     "the job shows its canary", on_worker)  # fmt: skip
        delivered = consumer.deliveries()
    finally:
        consumer.stop()
    assert job.status in (JobStatus.RUNNING, JobStatus.WAITING)  # watching its canary
    assert len(delivered) == 10  # only the canary went out
    assert "started a canary replay of `PaymentDeclined`" in _said(slack.wait_responses(1)[0])
