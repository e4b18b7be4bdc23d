"""The bulk review of a replay into a queue the console drains (issue 26): the sample says
so and offers the override; confirming without it is refused naming the queue, with it the
job is created and its audit row says so. The real broker's bindings decide the route."""

import json

import pytest

from dlq.models.actions import AuditEntry, Job
from tests.factories import make_messages, post
from tests.uiops import body, review_url
from tests.web.test_bulk import replay_to, words

pytestmark = pytest.mark.django_db


def test_a_bulk_replay_into_a_drained_queue_needs_the_override(settings, operator, top, started):
    settings.DLQ_QUEUES = [top.name("orders*")]
    work, park = top.queue("orders"), top.queue("orders.dlq")
    messages = make_messages(2, queue=park, died_in=work, exchange="", routing_key=work)
    url = review_url("replay", id=messages[0].pk) + f"&id={messages[1].pk}"

    review = words(body(operator.get(url + "&replay-target=failed_queue")))
    assert f"The route reaches {work}, which the console itself drains" in review
    assert f"{work} drained by the console" in review  # in the sample's routes
    assert "Replay into a queue the console drains anyway" in review

    refused = post(operator, url, {**replay_to("failed_queue"), "reason": "fixed"})
    assert refused.status_code == 400
    assert f"the route reaches &#x27;{work}&#x27;, which the console itself drains" in body(refused)
    assert not Job.objects.exists() and started == []

    allowed = post(operator, url, {**replay_to("failed_queue", allow_drained="on"),
                                   "reason": "fixed"})  # fmt: skip
    assert allowed.status_code == 302
    entry = AuditEntry.objects.get(action="job_create")
    assert json.loads(entry.detail)["allow_drained"] == [work]


def test_a_bulk_replay_elsewhere_offers_no_override(settings, operator, top):
    settings.DLQ_QUEUES = [top.name("*.dlq")]
    work, park = top.queue("orders"), top.queue("orders.dlq")
    messages = make_messages(1, queue=park, died_in=work, exchange="", routing_key=work)

    review = body(operator.get(review_url("replay", id=messages[0].pk)))
    assert "allow_drained" not in review


def test_save_and_replay_into_a_drained_queue_saves_nothing_without_the_override(
    settings, operator, top, channel
):
    from dlq.models.actions import MessageVersion
    from tests.factories import make_message
    from tests.topology import get
    from tests.web.test_edit_replay import page, save_and_replay, text

    settings.DLQ_QUEUES = [top.name("orders*")]
    work = top.queue("orders")
    message = make_message(queue=top.name("orders.dlq"), died_in=work, exchange="",
                           routing_key=work, body=b'{"order": 1}')  # fmt: skip
    form = page(operator, message)

    refused = save_and_replay(operator, message, form, follow=False, **{
        "edit-body": '{"order": 2}', "after-target": "failed_queue"})  # fmt: skip
    assert refused.status_code == 400
    assert f"the route reaches &#x27;{work}&#x27;, which the console itself drains" in text(refused)
    assert not MessageVersion.objects.exists()  # nothing saved

    allowed = save_and_replay(operator, message, form, **{
        "edit-body": '{"order": 2}', "after-target": "failed_queue",
        "after-allow_drained": "on"})  # fmt: skip
    assert "Replay outcome: confirmed" in text(allowed)
    assert get(channel, work)[2] == b'{"order": 2}'
