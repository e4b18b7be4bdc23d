"""Redrive policies through the API (contract: "Redrive policies"): admins define them
(400 naming the field, audited with before and after), everyone reads them; a saved policy
matches the parked messages there are, and the message detail and the group say so."""

from datetime import datetime, timedelta

import pytest

from dlq.models import AuditEntry, Message
from dlq.models.redrive import RedriveDue, RedrivePolicy
from tests.factories import client_for, make_messages, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_api():
    return client_for(make_user("admin"), token=True)


@pytest.fixture
def viewer_api():
    return client_for(make_user("viewer"), token=True)


def _policy(**changes) -> dict:
    body = {
        "name": "flaky-payments",
        "match": {"queue": "payments.dlq"},
        "target": "original",
        "delay_seconds": 30,
        "backoff": 2,
        "max_attempts": 3,
        "reason": "flaky downstream",
    }
    return {**body, **changes}  # fmt: skip


def _post(client, body):
    return client.post("/api/v1/policies", body, content_type="application/json")


def _put(client, policy_id, body):
    return client.put(f"/api/v1/policies/{policy_id}", body, content_type="application/json")


def test_an_admin_creates_a_policy_with_the_defaults_and_everyone_reads_it(admin_api, viewer_api):
    answer = _post(admin_api, _policy())

    assert answer.status_code == 201, answer.content
    created = answer.json()
    assert created == {
        "id": created["id"], "name": "flaky-payments", "enabled": True,
        "match": {"queue": "payments.dlq"}, "target": "original", "delay_seconds": 30,
        "backoff": 2.0, "max_attempts": 3, "rate_per_s": None, "require_consumers": True,
        "trip_returns": 10, "trip_window_seconds": 300, "state": "active", "waiting": "",
        "waiting_since": None,
    }  # fmt: skip
    assert viewer_api.get(f"/api/v1/policies/{created['id']}").json() == created
    assert viewer_api.get("/api/v1/policies").json() == {"results": [created]}
    row = AuditEntry.objects.get(action="policy_create")
    assert row.actor_name.startswith("admin") and row.reason == "flaky downstream"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"match": {}}, "match"),
        ({"match": {"colour": "red"}}, "match"),
        ({"target": "somewhere"}, "target"),
        ({"delay_seconds": 0}, "delay_seconds"),
        ({"backoff": 0.5}, "backoff"),
        ({"max_attempts": 0}, "max_attempts"),
        ({"rate_per_s": 0}, "rate_per_s"),
        ({"name": "  "}, "name"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(admin_api, changes, field):
    answer = _post(admin_api, _policy(**changes))

    assert answer.status_code == 400, answer.content
    assert any(key.split(".")[0] == field for key in answer.json()["errors"]), answer.json()


def test_a_name_is_unique(admin_api):
    assert _post(admin_api, _policy()).status_code == 201
    answer = _post(admin_api, _policy())
    assert answer.status_code == 400 and "name" in answer.json()["errors"]


def test_only_an_admin_changes_policies(viewer_api):
    operator = client_for(make_user("operator"), token=True)
    assert _post(operator, _policy()).status_code == 403
    assert _post(viewer_api, _policy()).status_code == 403


def test_a_policy_matches_the_parked_messages_there_are(admin_api, viewer_api):
    matched = make_messages(2, queue="payments.dlq")
    other = make_messages(1, queue="orders.dlq")[0]

    policy = _post(admin_api, _policy()).json()

    first = viewer_api.get(f"/api/v1/messages/{matched[0].pk}").json()["redrive"]
    due = matched[0].received_at + timedelta(seconds=30)
    assert first["policy"] == policy["id"] and first["attempt"] == 0
    assert first["exhausted"] is False
    assert abs(datetime.fromisoformat(first["next_at"]) - due) < timedelta(milliseconds=1)
    assert viewer_api.get(f"/api/v1/messages/{other.pk}").json()["redrive"] is None
    group = viewer_api.get(f"/api/v1/groups/{matched[0].group}").json()
    assert group["policy"] == policy["id"]


def test_an_edit_applies_to_the_waiting_messages_and_a_delete_forgets_them(admin_api):
    message = make_messages(1, queue="payments.dlq")[0]
    policy = _post(admin_api, _policy()).json()

    changed = _put(admin_api, policy["id"], _policy(delay_seconds=600, max_attempts=1))

    assert changed.status_code == 200, changed.content
    row = RedriveDue.objects.get(message=message)
    assert row.next_at == message.received_at + timedelta(seconds=600)
    row = AuditEntry.objects.get(action="policy_update")
    assert '"delay_seconds": 30' in row.detail and '"delay_seconds": 600' in row.detail

    _put(admin_api, policy["id"], _policy(match={"queue": "elsewhere"}))
    assert not RedriveDue.objects.filter(message=message).exists()

    answer = admin_api.delete(f"/api/v1/policies/{policy['id']}?reason=gone")
    assert answer.status_code == 204
    assert admin_api.get(f"/api/v1/policies/{policy['id']}").status_code == 404
    assert AuditEntry.objects.filter(action="policy_delete").exists()
    assert Message.objects.filter(pk=message.pk).exists()


def test_the_groups_list_names_each_groups_policy(admin_api, viewer_api):
    held = make_messages(2, queue="payments.dlq")[0].group
    named = make_messages(1, queue="orders.dlq", died_in="orders.work")[0].group
    free = make_messages(1, queue="stock.dlq", died_in="stock.work")[0].group
    by_queue = _post(admin_api, _policy()).json()["id"]
    by_group = _post(admin_api, _policy(name="one group", match={"group": named})).json()["id"]
    rows = viewer_api.get("/api/v1/groups?limit=10").json()["results"]
    assert {r["id"]: r["policy"] for r in rows} == {held: by_queue, named: by_group, free: None}


def test_disabling_keeps_the_policy_and_enabling_re_arms_a_tripped_one(admin_api, viewer_api):
    group = make_messages(1, queue="payments.dlq")[0].group
    policy = _post(admin_api, _policy()).json()
    assert _put(admin_api, policy["id"], _policy(enabled=False)).json()["state"] == "disabled"
    assert viewer_api.get(f"/api/v1/groups/{group}").json()["policy"] is None  # applies not
    RedrivePolicy.objects.filter(pk=policy["id"]).update(state="tripped", enabled=True)
    assert _put(admin_api, policy["id"], _policy()).json()["state"] == "active"


def test_a_second_policy_of_the_same_name_is_refused_naming_the_field(admin_api):
    assert _post(admin_api, _policy()).status_code == 201
    again = _post(admin_api, _policy())

    assert again.status_code == 400
    assert again.json()["errors"] == {"name": ["another policy has this name"]}
