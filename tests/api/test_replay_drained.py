"""A replay whose route reaches a queue the console drains itself comes straight back as an
arrival with no death (issue 26): refused with a 400 naming the queue, unless the request
says `allow_drained`, which the audit keeps. Real broker, through the API."""

import json

import pytest

from dlq.models import Message, Status
from dlq.models.actions import AuditEntry, Job, Replay
from tests.factories import client_for, make_message, make_messages, make_user
from tests.topology import depth, get

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator():
    return client_for(make_user("operator"), token=True)


@pytest.fixture
def shop(settings, channel, top):
    """`DLQ_QUEUES=orders*`: the work queue `orders`, bound to the exchange `shop`, is drained
    by mistake beside the parking queue `orders.dlq`."""
    settings.DLQ_QUEUES = [top.name("orders*")]
    work = top.queue("orders")
    exchange = top.exchange("shop")
    channel.queue_bind(work, exchange, "new")
    park = top.queue("orders.dlq")
    elsewhere = top.queue("billing")
    return {"work": work, "exchange": exchange, "park": park, "billing": elsewhere}


def _parked(shop) -> Message:
    return make_message(queue=shop["park"], died_in=shop["work"], exchange=shop["exchange"],
                        routing_key="new")  # fmt: skip


def _replay(client, message_id, target, **extra):
    body = {"target": target, "reason": "consumer fixed", **extra}
    return client.post(f"/api/v1/messages/{message_id}/replay", body,
                       content_type="application/json")  # fmt: skip


def _target_error(response) -> str:
    assert response.status_code == 400, response.content
    return " ".join(response.json()["errors"]["target"])


@pytest.mark.parametrize("target", ["original", "failed_queue"])
def test_a_replay_into_a_drained_work_queue_is_refused_naming_it(shop, operator, channel, target):
    m = _parked(shop)

    error = _target_error(_replay(operator, m.pk, target))

    assert f"reaches '{shop['work']}', which the console itself drains" in error
    assert "allow_drained" in error
    assert depth(channel, shop["work"]) == 0  # nothing was published
    m.refresh_from_db()
    assert m.status == Status.PARKED
    assert not Replay.objects.filter(message=m).exists()


def test_a_custom_target_into_the_parking_queue_itself_is_refused(shop, operator):
    m = _parked(shop)
    custom = {"exchange": "", "routing_key": shop["park"]}

    assert f"reaches '{shop['park']}'" in _target_error(_replay(operator, m.pk, custom))
    billing = {"exchange": "", "routing_key": shop["billing"]}
    assert _replay(operator, m.pk, billing).json()["outcome"] == "confirmed"


def test_allow_drained_replays_and_the_audit_says_so(shop, operator, channel):
    m = _parked(shop)

    response = _replay(operator, m.pk, "original", allow_drained=True)

    assert response.json()["outcome"] == "confirmed"
    _, _, body = get(channel, shop["work"])
    assert body == m.body
    row = operator.get("/api/v1/audit").json()["results"][0]
    assert row["detail"]["allow_drained"] == [shop["work"]]


def test_the_route_preview_names_the_drained_queues(shop, operator):
    m = _parked(shop)

    preview = operator.get(f"/api/v1/messages/{m.pk}/route?target=original").json()

    assert (preview["queues"], preview["drained"]) == ([shop["work"]], [shop["work"]])


def test_a_bulk_replay_into_a_drained_queue_is_refused_unless_allowed(shop, operator, started):
    make_messages(3, queue=shop["park"], died_in=shop["work"], exchange=shop["exchange"],
                  routing_key="new")  # fmt: skip
    body = {"action": "replay", "filter": {"queue": shop["park"]}, "target": "original",
            "reason": "consumer fixed"}  # fmt: skip

    refused = operator.post("/api/v1/jobs", body, content_type="application/json")

    assert f"reaches '{shop['work']}'" in _target_error(refused)
    assert not Job.objects.exists() and started == []
    allowed = operator.post("/api/v1/jobs", {**body, "allow_drained": True},
                            content_type="application/json")  # fmt: skip
    assert allowed.status_code == 202
    entry = AuditEntry.objects.get(action="job_create")
    assert json.loads(entry.detail)["allow_drained"] == [shop["work"]]


def test_a_bulk_replay_elsewhere_is_not_refused(shop, operator, started):
    make_messages(2, queue=shop["park"], died_in=shop["billing"], exchange="",
                  routing_key=shop["billing"])  # fmt: skip
    body = {"action": "replay", "filter": {"queue": shop["park"]}, "target": "failed_queue",
            "reason": "consumer fixed"}  # fmt: skip

    assert operator.post("/api/v1/jobs", body, content_type="application/json").status_code == 202
