"""Safe replay at the edges a user will hit (issue 28, point 7), on the real broker: a vhost
the console's user may not open, a message a redrive policy holds, a selection across two
vhosts. The turns are run in the test's process, as a worker would run them."""

import json
from urllib.parse import quote, urlsplit

import pytest

from dlq.actions import message as message_actions
from dlq.broker.publisher import ConfirmPublisher
from dlq.jobs import control, running
from dlq.models import Message, Status
from dlq.models.actions import AuditAction, AuditEntry, Job, JobStatus, Replay
from dlq.tasks import jobs as job_tasks
from tests.factories import client_for, make_messages, make_user, post
from tests.topology import consumed, depth

pytestmark = pytest.mark.django_db(transaction=True)


def _safe_job(messages, **changes) -> Job:
    values = {"ids": [m.pk for m in messages], "target": "original", "reason": "r",
              "require_consumers": True, **changes}  # fmt: skip
    return control.create_job("grace", "replay", **values)


def _service(ch, prefix: str, bound: bool = True) -> tuple[str, str]:
    """An exchange and (when `bound`) a work queue it routes `k` to, in the channel's vhost."""
    ch.exchange_declare(f"{prefix}.events", "direct")
    ch.queue_declare(f"{prefix}.work")
    if bound:
        ch.queue_bind(f"{prefix}.work", f"{prefix}.events", "k")
    return f"{prefix}.events", f"{prefix}.work"


def test_a_vhost_the_consoles_user_may_not_open_keeps_the_job_waiting(vhosts, rabbit, unique):
    closed = vhosts.make("closed")
    events, work = _service(vhosts.channel(closed), unique)
    consumed(vhosts.channel(closed), closed, work)  # the gate's other checks pass
    messages = make_messages(2, queue=f"{unique}.dlq", vhost=closed, exchange=events,
                             routing_key="k", died_in=work)  # fmt: skip
    job = _safe_job(messages)
    user = urlsplit(rabbit.url).username
    vhosts.api("DELETE", f"/api/permissions/{quote(closed, safe='')}/{user}")

    assert running.run_job(job.pk) == JobStatus.WAITING

    job.refresh_from_db()
    assert job.status_detail.startswith(
        f"the console's user cannot open vhost {closed!r}, so it cannot publish there:"
    ), job.status_detail
    assert job.step == 0 and not Replay.objects.filter(job=job).exists()
    statuses = Message.objects.filter(pk__in=[m.pk for m in messages]).values_list("status")
    assert set(statuses) == {(Status.PARKED,)}
    operator = make_user("operator")  # and what a user opens about it answers, no 500
    assert client_for(operator).get(f"/jobs/{job.pk}/").status_code == 200
    answer = client_for(operator, token=True).get(f"/api/v1/jobs/{job.pk}")
    assert answer.json()["status_detail"] == job.status_detail


def test_a_message_a_policy_holds_is_skipped_by_a_job(top, rabbit):
    work = top.queue("work")
    held, free = make_messages(2, queue=top.name("dlq"), died_in=work)
    publisher = ConfirmPublisher(rabbit.url, "dlq-redrive")
    try:  # the policy's tick has claimed `held` and not yet settled it
        message_actions.claim_for_replay(held.pk, "failed_queue", "policy:flaky", publisher)
    finally:
        publisher.close()
    job = control.create_job("grace", "replay", ids=[held.pk, free.pk], target="failed_queue",
                             reason="r")  # fmt: skip

    assert running.run_job(job.pk) == JobStatus.DONE

    job.refresh_from_db()
    assert (job.outcomes.get("confirmed"), job.outcomes.get("skipped")) == (1, 1), job.outcomes
    assert Replay.objects.get(job=job).message_id == free.pk
    assert Message.objects.get(pk=held.pk).status == Status.REPLAYING  # still the policy's
    assert Replay.objects.get(message=held).actor_name == "policy:flaky"
    assert depth(top.ch, work) == 1


def test_a_selection_across_two_vhosts_is_gated_in_each_ones_own(vhosts, unique):
    a, b = vhosts.make("a"), vhosts.make("b")
    in_a, in_b = vhosts.channel(a), vhosts.channel(b)
    events, work = _service(in_a, unique)
    _service(in_b, unique, bound=False)  # the same names; in b nothing is bound
    consumed(in_a, a, work)
    consumed(in_b, b, work)
    messages = [
        *make_messages(1, queue=f"{unique}.dlq", vhost=a, exchange=events, routing_key="k",
                       died_in=work),
        *make_messages(1, queue=f"{unique}.dlq", vhost=b, exchange=events, routing_key="k",
                       died_in=work),
    ]  # fmt: skip
    job = _safe_job(messages)

    assert running.run_job(job.pk) == JobStatus.WAITING

    job.refresh_from_db()
    assert job.status_detail == (
        f"exchange {events!r} routes 'k' to no queue in vhost {b!r}: nothing would receive"
        " the replay"
    )
    assert not Replay.objects.filter(job=job).exists()
    assert in_a.queue_declare(work, passive=True).method.message_count == 0


def _by_region(top) -> tuple[str, str]:
    """A headers exchange routing `region: eu` to a work queue, and nothing else anywhere."""
    exchange, eu = top.exchange("by-region", "headers"), top.queue("eu")
    top.ch.queue_bind(eu, exchange, arguments={"x-match": "all", "region": "eu"})
    return exchange, eu


def test_a_headers_exchange_is_gated_by_where_each_messages_headers_take_it(top, rabbit):
    # The gate used to walk the bindings with no headers: "routes to no queue", for ever.
    exchange, eu = _by_region(top)
    consumed(top.ch, "/", eu)
    messages = make_messages(2, queue=top.name("dlq"), exchange=exchange, routing_key="k",
                             died_in=eu, headers={"region": "eu"})  # fmt: skip
    job = _safe_job(messages)

    assert running.run_job(job.pk) == JobStatus.DONE, Job.objects.get(pk=job.pk).status_detail

    outcomes = Replay.objects.filter(job=job).values_list("outcome", flat=True)
    assert sorted(outcomes) == ["confirmed", "confirmed"]


def test_a_headers_exchange_that_takes_some_messages_nowhere_keeps_the_job_waiting(top, rabbit):
    exchange, eu = _by_region(top)
    consumed(top.ch, "/", eu)
    messages = [
        *make_messages(1, queue=top.name("dlq"), exchange=exchange, routing_key="k",
                       died_in=eu, headers={"region": "eu"}),
        # From another parking queue: another source taking the same route.
        *make_messages(1, queue=top.name("other.dlq"), exchange=exchange, routing_key="k",
                       died_in=eu, headers={"region": "us"}),
    ]  # fmt: skip
    job = _safe_job(messages)

    assert running.run_job(job.pk) == JobStatus.WAITING

    job.refresh_from_db()
    assert job.status_detail == (
        f"exchange {exchange!r} routes 'k' for the headers of some messages to no queue:"
        " nothing would receive the replay"
    )
    assert not Replay.objects.filter(job=job).exists()


def test_a_retry_into_a_drained_queue_needs_its_own_allow_drained(top, settings, monkeypatch):
    settings.DLQ_QUEUES = [top.name("*.dlq")]
    exchange = top.name("payments")  # not there yet: the job's replays fail
    messages = make_messages(2, queue=top.name("a.dlq"), exchange=exchange, routing_key="k",
                             died_in=top.name("work"))  # fmt: skip
    job = control.create_job("grace", "replay", ids=[m.pk for m in messages], target="original",
                             reason="fix deployed")  # fmt: skip
    running.run_job(job.pk)
    assert Job.objects.get(pk=job.pk).failed == 2
    # Made since, and bound to a queue the console drains: a retry would loop.
    top.exchange("payments")
    top.ch.queue_bind(top.queue("loop.dlq"), exchange, "k")
    started = []
    monkeypatch.setattr(job_tasks, "start", started.append)
    api = client_for(make_user("operator"), token=True)
    path = f"/api/v1/jobs/{job.pk}/retry-failed"

    refused = api.post(path, {"reason": "again"}, content_type="application/json")
    allowed = api.post(path, {"reason": "again, into it", "allow_drained": True},
                       content_type="application/json")  # fmt: skip

    assert refused.status_code == 400
    assert "which the console itself drains" in refused.json()["errors"]["target"][0]
    assert allowed.status_code == 202, allowed.content
    assert [j.pk for j in started] == [allowed.json()["id"]]
    created = AuditEntry.objects.get(action=AuditAction.JOB_CREATE, job_id=allowed.json()["id"])
    assert json.loads(created.detail)["allow_drained"] == [top.name("loop.dlq")]

    # The page: refused, it offers the override; ticked, the retry is made.
    page = client_for(make_user("operator"))
    form = f"/jobs/{job.pk}/retry-failed/"
    offered = post(page, form, {"reason": "again"})
    assert offered.status_code == 400 and 'name="allow_drained"' in offered.content.decode()
    assert post(page, form, {"reason": "again", "allow_drained": "on"}).status_code == 302
    assert len(started) == 2
