"""GET /api/v1/alerts: the alerts sent, newest first, each group with its lifecycle state
(open, acknowledged by whom and when, resolved), paged by limit and offset; every role reads
it, nobody unauthenticated does."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from dlq.models import AttemptStatus, Status
from tests.factories import client_for, make_user
from tests.sentalerts import acknowledge, failure_group, sent_alert

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer():
    return client_for(make_user("viewer"), token=True)


def test_a_viewer_reads_each_group_in_its_state():
    opened, owned, gone = failure_group("open"), failure_group("owned"), failure_group(
        "gone", status=Status.REPLAYED)  # fmt: skip
    owner = make_user("operator")
    at = timezone.now() - timedelta(minutes=3)
    acknowledge(owned, owner, at)
    alert = sent_alert({opened: 5, owned: 3, gone: 1}, channel="team")

    answer = client_for(make_user("viewer"), token=True).get("/api/v1/alerts")

    assert answer.status_code == 200
    body = answer.json()
    assert body["count"] == 1 and body["next_offset"] is None
    [sent] = body["results"]
    assert (sent["id"], sent["channel"]) == (alert.pk, "team")
    assert sent["at"].startswith(alert.finished_at.strftime("%Y-%m-%dT%H:%M:%S"))
    acked_at = sent["groups"][1]["acknowledged_at"]
    assert acked_at.startswith(at.strftime("%Y-%m-%dT%H:%M:%S"))
    assert sent["groups"] == [  # largest first
        {"group": opened, "count": 5, "state": "open", "acknowledged_by": None,
         "acknowledged_at": None},
        {"group": owned, "count": 3, "state": "acknowledged",
         "acknowledged_by": owner.username, "acknowledged_at": acked_at},
        {"group": gone, "count": 1, "state": "resolved", "acknowledged_by": None,
         "acknowledged_at": None},
    ]  # fmt: skip


def test_alerts_come_newest_first_and_only_those_that_reached_their_channel(viewer):
    group = failure_group("orders")
    now = timezone.now()
    old = sent_alert({group: 1}, at=now - timedelta(hours=2))
    new = sent_alert({group: 2}, at=now - timedelta(minutes=1))
    sent_alert({group: 3}, at=now, status=AttemptStatus.FAILED)  # never reached it
    sent_alert({group: 4}, at=now, kind="test")  # a channel test names no group

    body = viewer.get("/api/v1/alerts").json()

    assert [a["id"] for a in body["results"]] == [new.pk, old.pk]
    assert body["count"] == 2


def test_limit_and_offset_page_through_them(viewer):
    group = failure_group("orders")
    now = timezone.now()
    made = [sent_alert({group: 1}, at=now - timedelta(minutes=i)).pk for i in range(5)]

    first = viewer.get("/api/v1/alerts?limit=2").json()
    second = viewer.get(f"/api/v1/alerts?limit=2&offset={first['next_offset']}").json()
    last = viewer.get("/api/v1/alerts?limit=2&offset=4").json()
    past = viewer.get("/api/v1/alerts?limit=2&offset=9").json()

    assert [a["id"] for a in first["results"]] == made[:2] and first["next_offset"] == 2
    assert [a["id"] for a in second["results"]] == made[2:4] and second["next_offset"] == 4
    assert [a["id"] for a in last["results"]] == made[4:] and last["next_offset"] is None
    assert past["results"] == [] and past["count"] == 5 and past["next_offset"] is None


@pytest.mark.parametrize("query", ["limit=0", "limit=201", "limit=many", "offset=-1",
                                   "offset=x"])  # fmt: skip
def test_a_bad_limit_or_offset_is_a_400(viewer, query):
    answer = viewer.get(f"/api/v1/alerts?{query}")

    assert answer.status_code == 400
    assert answer.json()["detail"]


def test_nobody_unauthenticated_reads_them():
    sent_alert({failure_group("orders"): 1})

    answer = Client().get("/api/v1/alerts")

    assert answer.status_code == 401
    assert "orders" not in answer.content.decode()


def test_every_role_reads_them():
    sent_alert({failure_group("orders"): 1})
    for role in ("viewer", "operator", "admin"):
        answer = client_for(make_user(role), token=True).get("/api/v1/alerts")
        assert answer.status_code == 200 and answer.json()["count"] == 1
    assert client_for(make_user(None), token=True).get("/api/v1/alerts").status_code == 403
