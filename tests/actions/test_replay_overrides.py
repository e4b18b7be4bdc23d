"""Per-queue replay overrides: admins manage them in the API (at /api/v1/replay-targets, its
path before the name settled) and on their page, every change audited; a replay to
"original" and its route preview follow them."""

import json

import pytest
from django.test import Client

from dlq.actions import message as message_actions
from dlq.models import AuditEntry
from dlq.models.actions import ReplayOverride
from tests.factories import client_for, make_message, make_user, post
from tests.topology import get

pytestmark = pytest.mark.django_db(transaction=True)
OVERRIDE = {"queue_pattern": "symfony.*", "exchange": "messages", "routing_key": "invoices",
          "reason": "delay queues are gone"}  # fmt: skip


def api(role: str):
    return client_for(make_user(role), token=True)


def test_admins_manage_overrides_through_the_api_and_each_change_is_audited():
    admin = api("admin")
    made = admin.post("/api/v1/replay-targets", OVERRIDE, content_type="application/json")
    assert made.status_code == 201, made.content
    override = made.json()
    shown = {k: override[k] for k in ("queue_pattern", "exchange", "routing_key")}
    assert shown == {k: OVERRIDE[k] for k in shown}
    listed = api("viewer").get("/api/v1/replay-targets").json()["results"]
    assert [t["id"] for t in listed] == [override["id"]]

    changed = admin.put(f"/api/v1/replay-targets/{override['id']}",
                        {**OVERRIDE, "routing_key": "invoices.v2", "reason": "renamed"},
                        content_type="application/json")  # fmt: skip
    assert changed.status_code == 200 and changed.json()["routing_key"] == "invoices.v2"
    assert admin.delete(f"/api/v1/replay-targets/{override['id']}").status_code == 400  # reason
    gone = admin.delete(f"/api/v1/replay-targets/{override['id']}?reason=not+needed")
    assert gone.status_code == 204 and not ReplayOverride.objects.exists()
    assert admin.delete(f"/api/v1/replay-targets/{override['id']}?reason=x").status_code == 404

    entries = AuditEntry.objects.filter(action="replay_target_change").order_by("id")
    assert [e.reason for e in entries] == ["delay queues are gone", "renamed", "not needed"]
    first, second, third = (json.loads(e.detail) for e in entries)
    assert first["before"] is None and first["after"]["routing_key"] == "invoices"
    assert second["before"]["routing_key"] == "invoices"
    assert second["after"]["routing_key"] == "invoices.v2"
    assert third["before"]["routing_key"] == "invoices.v2" and third["after"] is None


@pytest.mark.parametrize("role", ["viewer", "operator", None])
def test_only_admins_change_overrides(role):
    if role is None:
        anonymous = Client()
        assert anonymous.get("/api/v1/replay-targets").status_code == 401
        assert anonymous.post("/api/v1/replay-targets", OVERRIDE,
                              content_type="application/json").status_code == 401  # fmt: skip
        return
    client = api(role)
    assert client.post("/api/v1/replay-targets", OVERRIDE,
                       content_type="application/json").status_code == 403  # fmt: skip
    assert not ReplayOverride.objects.exists()


@pytest.mark.parametrize(
    ("change", "field"),
    [({"queue_pattern": " "}, "queue_pattern"), ({"exchange": "x" * 256}, "exchange"),
     ({"routing_key": "a\x00b"}, "routing_key"), ({"reason": ""}, "reason"),
     ({"exchange": "", "routing_key": ""}, "routing_key"),  # the default exchange needs a key
     ({"queue_pattern": "\ud800"}, "queue_pattern")],
)  # fmt: skip
def test_bad_overrides_are_refused_field_by_field(change, field):
    answer = api("admin").post("/api/v1/replay-targets", {**OVERRIDE, **change},
                               content_type="application/json")  # fmt: skip
    assert answer.status_code == 400
    assert field in answer.json()["errors"]
    assert not ReplayOverride.objects.exists()


def test_a_duplicate_pattern_is_refused():
    admin = api("admin")
    admin.post("/api/v1/replay-targets", OVERRIDE, content_type="application/json")
    again = admin.post("/api/v1/replay-targets", OVERRIDE, content_type="application/json")
    assert again.status_code == 400 and "queue_pattern" in again.json()["errors"]


def test_one_pattern_spelled_two_ways_is_one_override():
    admin = api("admin")
    first = admin.post("/api/v1/replay-targets", OVERRIDE, content_type="application/json")
    assert first.status_code in (200, 201)
    spelled = {**OVERRIDE, "queue_pattern": "%2F/symfony.*"}  # vhost / is the default vhost
    again = admin.post("/api/v1/replay-targets", spelled, content_type="application/json")
    assert again.status_code == 400
    assert (
        "already has this pattern, written 'symfony.*'"
        in again.json()["errors"]["queue_pattern"][0]
    )
    other_vhost = {**OVERRIDE, "queue_pattern": "billing/symfony.*"}
    assert admin.post("/api/v1/replay-targets", other_vhost,
                      content_type="application/json").status_code in (200, 201)  # fmt: skip


def test_the_page_shows_overrides_and_admins_change_them():
    admin, viewer = client_for(make_user("admin")), client_for(make_user("viewer"))
    data = {f"new-{k}": v for k, v in OVERRIDE.items()}
    assert post(viewer, "/replay-overrides/add/", data).status_code == 403
    response = post(admin, "/replay-overrides/add/", data, follow=True)
    assert "Replay override for symfony.* saved" in response.content.decode()
    override = ReplayOverride.objects.get()
    page = viewer.get("/replay-overrides/").content.decode()
    assert "<code>symfony.*</code>" in page and "<code>invoices</code>" in page
    assert "Change or delete" not in page  # a viewer reads only

    unexplained = {f"o{override.pk}-{k}": v for k, v in {**OVERRIDE, "reason": ""}.items()}
    bad = post(admin, f"/replay-overrides/{override.pk}/", unexplained)
    assert bad.status_code == 400 and "This field is required" in bad.content.decode()
    gone = post(admin, f"/replay-overrides/{override.pk}/delete/",
                {f"d{override.pk}-reason": "done"}, follow=True)  # fmt: skip
    assert "Replay override deleted" in gone.content.decode()
    assert not ReplayOverride.objects.exists()


def test_original_follows_the_override_and_the_preview_says_so(channel, top):
    work = top.queue("work")
    exchange = top.exchange("messages")
    invoices = top.queue("invoices")
    channel.queue_bind(invoices, exchange, "invoices")
    m = make_message(queue=top.name("dlq"), died_in=work, exchange="delays",
                     routing_key="delay_invoices_1000")  # fmt: skip
    api("admin").post("/api/v1/replay-targets",
                      {**OVERRIDE, "queue_pattern": top.name("*"), "exchange": exchange},
                      content_type="application/json")  # fmt: skip

    preview = (
        client_for(make_user("operator"))
        .get(f"/messages/{m.pk}/route/", {"replay-target": "original"})
        .content.decode()
    )
    assert f"<code>{invoices}</code>" in preview
    assert 'id="route-override"' in preview and top.name("*") in preview

    through_api = api("viewer").get(f"/api/v1/messages/{m.pk}/route", {"target": "original"})
    assert through_api.json()["replay_target"] == top.name("*")
    assert through_api.json()["queues"] == [invoices]
    failed = api("viewer").get(f"/api/v1/messages/{m.pk}/route", {"target": "failed_queue"})
    assert failed.json()["replay_target"] is None

    result = message_actions.replay_one(m.pk, "original", "ops", "fixed")
    assert result.outcome == "confirmed"
    assert get(channel, invoices)[2] == bytes(m.body)


def test_changing_an_override_that_is_gone_is_a_404():
    admin = client_for(make_user("admin"))
    data = {f"o99-{k}": v for k, v in OVERRIDE.items()}
    assert post(admin, "/replay-overrides/99/", data).status_code == 404
    assert not ReplayOverride.objects.exists()


def test_the_page_keeps_its_old_address_for_bookmarks():
    old = client_for(make_user("viewer")).get("/replay-targets/")
    assert old.status_code == 301 and old["Location"] == "/replay-overrides/"
