"""Failure groups as a worklist through the API (issue 27): names, counts, queues, the
derived state (a replayed last message resolves a group at once, a new arrival reopens it),
filters and pages, and who is on a group: PATCH by operators, 400 naming the field, audited
with before and after."""

from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client

from dlq.groups import worklist
from dlq.models import AuditEntry, Message
from tests.factories import client_for, make_message, make_messages, make_user

pytestmark = pytest.mark.django_db

JAVA = {"exception_type": "java.lang.RuntimeException",
        "exception_message": "card declined\nissuer said: do not honour",
        "message_type": "ChargeCard"}  # fmt: skip


@pytest.fixture
def viewer():
    return client_for(make_user("viewer"), token=True)


@pytest.fixture
def oper():
    user = make_user("operator")
    return user, client_for(user, token=True)


def _spring(top, work: str, count: int = 1, **kwargs):
    """Messages a Spring consumer rejected: exception headers and a type id."""
    trace = (
        f"{JAVA['exception_type']}: {JAVA['exception_message']}\n\tat Charge.run(Charge.java:12)"
    )
    headers = {"x-exception-stacktrace": trace,
               "x-exception-message": JAVA["exception_message"],
               "__TypeId__": JAVA["message_type"]}  # fmt: skip
    return make_messages(count, queue=top.name("dlq"), died_in=work, exchange="",
                         routing_key=work, headers=headers, **kwargs)  # fmt: skip


def _patch(client, group: str, **body):
    return client.patch(f"/api/v1/groups/{group}", body, content_type="application/json")


def test_a_group_is_named_counted_and_placed(top, viewer):
    work = top.queue("work")
    messages = _spring(top, work, 3)
    group = messages[0].group

    answer = viewer.get(f"/api/v1/groups/{group}").json()

    assert answer["name"] == "ChargeCard · java.lang.RuntimeException: card declined"
    assert (answer["message_type"], answer["exception_type"]) == (
        "ChargeCard", "java.lang.RuntimeException")  # fmt: skip
    assert answer["exception_message"] == "card declined"
    assert answer["queues"] == [{"vhost": "/", "queue": top.name("dlq")}]
    assert (answer["parked"], answer["state"], answer["owner"]) == (3, "new", None)
    assert (answer["note"], answer["ticket_url"], answer["hold_until"]) == ("", "", None)
    assert answer["policy"] is None
    assert answer["first_seen"] and answer["last_seen"] >= answer["first_seen"]
    listed = viewer.get("/api/v1/groups", {"queue": top.name("dlq")}).json()
    assert [g["id"] for g in listed["results"]] == [group]
    assert listed["results"][0] == answer
    assert viewer.get("/api/v1/groups/0000000000000000").status_code == 404


def test_a_replayed_last_message_resolves_the_group_and_an_arrival_reopens_it(top, oper):
    user, client = oper
    work = top.queue("work")
    (m,) = _spring(top, work)
    assert _patch(client, m.group, owner=user.username, reason="mine").status_code == 200

    replayed = client.post(f"/api/v1/messages/{m.pk}/replay",
                           {"target": "original", "reason": "fixed"},
                           content_type="application/json")  # fmt: skip
    assert replayed.json()["outcome"] == "confirmed"

    group = client.get(f"/api/v1/groups/{m.group}").json()
    assert (group["parked"], group["state"]) == (0, "resolved")
    resolved = client.get("/api/v1/groups", {"queue": top.name("dlq"), "state": "resolved"})
    assert [g["id"] for g in resolved.json()["results"]] == [m.group]

    _spring(top, work)  # it fails again: the owner kept, so someone is on it
    group = client.get(f"/api/v1/groups/{m.group}").json()
    assert (group["parked"], group["state"], group["owner"]) == (1, "investigating", user.username)


def test_state_follows_owner_and_hold(top, oper):
    user, client = oper
    group = _spring(top, top.queue("work"))[0].group
    states = []
    later = (datetime.now(UTC) + timedelta(hours=2)).isoformat()
    for change in ({"owner": user.username}, {"hold_until": later}, {"hold_until": None},
                   {"owner": None}):  # fmt: skip
        response = _patch(client, group, reason="triage", **change)
        assert response.status_code == 200, response.content
        states.append(response.json()["state"])
    assert states == ["investigating", "on_hold", "investigating", "new"]


def test_the_list_filters_sorts_and_pages(top, oper, unique):
    user, client = oper
    dlq = top.name("dlq")
    big = make_messages(3, queue=dlq, died_in="a", reason="rejected")[0].group
    small = make_message(queue=dlq, died_in="b", reason="expired").group
    other = make_message(queue=top.name("other"), died_in="c").group
    _patch(client, small, owner=user.username, reason="mine")

    def ids(**params):
        response = client.get("/api/v1/groups", params)
        assert response.status_code == 200, response.content
        return [g["id"] for g in response.json()["results"]]

    assert ids(queue=dlq) == [big, small]  # most parked first
    assert ids(queue=dlq, state="investigating") == [small]
    assert ids(queue=dlq, owner=user.username) == [small]
    assert ids(queue=dlq, state="new") == [big]
    assert ids(queue=top.name("other")) == [other]
    assert ids(queue=dlq, vhost="elsewhere") == []
    assert ids(owner=f"nobody-{unique}") == []
    first = client.get("/api/v1/groups", {"queue": dlq, "limit": 1}).json()
    assert (first["count"], first["next_offset"], len(first["results"])) == (2, 1, 1)
    second = client.get("/api/v1/groups", {"queue": dlq, "limit": 1, "offset": 1}).json()
    assert ([g["id"] for g in second["results"]], second["next_offset"]) == ([small], None)
    beyond = client.get("/api/v1/groups", {"queue": dlq, "offset": 5}).json()
    assert (beyond["results"], beyond["count"]) == ([], 2)
    for bad in ({"state": "done"}, {"limit": 0}, {"offset": -1}):
        response = client.get("/api/v1/groups", bad)
        assert response.status_code == 400
        assert list(bad) == list(response.json()["errors"])


def test_only_operators_change_a_group_and_everyone_reads(top, viewer):
    group = make_message(queue=top.name("dlq")).group
    assert Client().get("/api/v1/groups").status_code == 401
    assert Client().get(f"/api/v1/groups/{group}").status_code == 401
    assert viewer.get("/api/v1/groups").status_code == 200
    assert _patch(viewer, group, note="x", reason="r").status_code == 403
    assert _patch(Client(), group, note="x", reason="r").status_code == 401
    assert not AuditEntry.objects.filter(action="group_update").exists()


def test_bad_changes_are_refused_naming_the_field(top, oper, unique):
    _, client = oper
    group = make_message(queue=top.name("dlq")).group
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    cases = [
        ({"owner": f"ghost-{unique}"}, "owner"),
        ({"ticket_url": "javascript:alert(1)"}, "ticket_url"),
        ({"ticket_url": "ftp://tickets.example.com/1"}, "ticket_url"),
        ({"hold_until": past}, "hold_until"),
        ({"hold_until": "next tuesday"}, "hold_until"),
        ({"note": "n" * 10_001}, "note"),
        ({"note": "x\x00y"}, "note"),
    ]
    for change, field in cases:
        response = _patch(client, group, reason="triage", **change)
        assert response.status_code == 400, (change, response.content)
        assert field in response.json()["errors"], (change, response.json())
    response = _patch(client, group, note="no reason")
    assert (response.status_code, list(response.json()["errors"])) == (400, ["reason"])
    response = _patch(client, group, note="blank reason", reason="  ")
    assert (response.status_code, list(response.json()["errors"])) == (400, ["reason"])
    assert _patch(client, "0000000000000000", note="x", reason="r").status_code == 404
    assert client.get(f"/api/v1/groups/{group}").json()["note"] == ""
    assert _patch(client, group, note="n" * 10_000, reason="r").status_code == 200


def test_a_change_is_audited_with_before_and_after(top, oper):
    user, client = oper
    group = make_message(queue=top.name("dlq")).group
    until = (datetime.now(UTC) + timedelta(days=1)).replace(microsecond=0)
    _patch(client, group, note="looking", reason="first look")

    response = client.patch(
        f"/api/v1/groups/{group}",
        {"owner": user.username, "ticket_url": "https://jira.example.com/browse/PAY-7",
         "hold_until": until.replace(tzinfo=None).isoformat(), "tz": "Asia/Kolkata",
         "reason": "waiting for the PSP"},
        content_type="application/json", headers={"X-Request-ID": "triage-7"},
    )  # fmt: skip

    assert response.status_code == 200, response.content
    kolkata = until.replace(tzinfo=None) - timedelta(hours=5, minutes=30)  # UTC+05:30
    assert response.json()["hold_until"].startswith(kolkata.isoformat())
    rows = client.get("/api/v1/audit", {"action": "group_update"}).json()["results"]
    latest = rows[0]
    assert (latest["reason"], latest["actor"], latest["request_id"]) == (
        "waiting for the PSP", user.username, "triage-7")  # fmt: skip
    assert latest["detail"]["group"] == group
    assert latest["detail"]["before"] == {"owner": None, "note": "looking", "ticket_url": "",
                                          "hold_until": None}  # fmt: skip
    after = latest["detail"]["after"]
    assert (after["owner"], after["note"]) == (user.username, "looking")
    assert after["ticket_url"] == "https://jira.example.com/browse/PAY-7"
    assert after["hold_until"].startswith(kolkata.isoformat())
    assert rows[1]["detail"]["after"]["note"] == "looking"


def test_counts_stay_exact_through_folds_and_deletes(top, viewer):
    messages = make_messages(4, queue=top.name("dlq"))
    group = messages[0].group
    Message.objects.filter(pk=messages[0].pk).update(status="discarded")
    worklist.fold()
    assert viewer.get(f"/api/v1/groups/{group}").json()["parked"] == 3
    Message.objects.filter(pk__in=[m.pk for m in messages[1:]]).delete()  # as retention does
    assert viewer.get(f"/api/v1/groups/{group}").json()["state"] == "resolved"
    Message.objects.filter(pk=messages[0].pk).delete()
    worklist.fold()
    assert viewer.get(f"/api/v1/groups/{group}").status_code == 404
    assert viewer.get("/api/v1/groups", {"queue": top.name("dlq")}).json()["count"] == 0
