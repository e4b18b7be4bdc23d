"""The Sent alerts page through Django's test client: every role reads the alerts and their
groups' states; operators press Acknowledge, Mute 1 h and Canary (the chat buttons' code,
acting as them, audited with the page's reason); viewers see no buttons and are refused;
bad input is a clear 4xx."""

import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from dlq.models import AuditEntry, GroupTriage, Job, Message, Mute, Status
from tests.factories import client_for, make_user, post
from tests.sentalerts import acknowledge, failure_group, sent_alert

pytestmark = pytest.mark.django_db

HOSTILE = "<b>boom</b>"


def body(response) -> str:
    return response.content.decode()


@pytest.fixture
def alert():
    groups = {"open": failure_group("orders"), "owned": failure_group("payments"),
              "gone": failure_group("shipping", status=Status.REPLAYED)}  # fmt: skip
    grace = make_user("operator")
    acknowledge(groups["owned"], grace)
    made = sent_alert({groups["open"]: 2, groups["owned"]: 2, groups["gone"]: 2}, channel="team")
    return made, groups, grace


def _row(html: str, alert, group: str) -> str:
    found = re.search(rf'<tr id="alert-{alert.pk}-{group}".*?</tr>', html, re.S)
    assert found, html
    return found.group(0)


def _press(client, alert, group: str, action: str, **extra):
    return post(client, "/alerts/sent/act/",
                {"alert": alert.pk, "group": group, "action": action, **extra})  # fmt: skip


def test_a_viewer_reads_the_states_and_sees_no_buttons(alert):
    sent, groups, grace = alert

    answer = client_for(make_user("viewer")).get("/alerts/sent/")

    assert answer.status_code == 200
    html = body(answer)
    assert 'href="/alerts/sent/" aria-current="page">Sent alerts' in html
    assert " to team</caption>" in html
    assert '<span class="badge badge-open">open</span>' in _row(html, sent, groups["open"])
    owned = _row(html, sent, groups["owned"])
    assert '<span class="badge badge-acknowledged">acknowledged</span>' in owned
    assert f"by {grace.username} at <time" in owned
    assert '<span class="badge badge-resolved">resolved</span>' in _row(html, sent, groups["gone"])
    assert "<button" not in html.split("<main", 1)[1]


def test_a_viewer_may_not_press(alert):
    sent, groups, _ = alert
    answer = _press(client_for(make_user("viewer")), sent, groups["open"], "ack")

    assert answer.status_code == 403
    assert not GroupTriage.objects.filter(group=groups["open"]).exists()
    assert not AuditEntry.objects.filter(action="group_update").exists()


def test_an_operator_sees_the_buttons_of_open_and_acknowledged_groups(alert):
    sent, groups, _ = alert

    html = body(client_for(make_user("operator")).get("/alerts/sent/"))

    for state in ("open", "owned"):
        row = _row(html, sent, groups[state])
        for words in ("Acknowledge", "Mute 1 h", "Canary"):
            assert f">{words}</button>" in row
        assert f'href="/groups/{groups[state]}/"' in row and ">Open</a>" in row
        assert 'name="csrfmiddlewaretoken"' in row
    assert "<button" not in _row(html, sent, groups["gone"])


def test_acknowledge_makes_the_operator_the_owner(alert):
    sent, groups, _ = alert
    operator = make_user("operator")
    client = client_for(operator)

    answer = _press(client, sent, groups["open"], "ack")

    assert answer.status_code == 302 and answer.url == "/alerts/sent/"
    triage = GroupTriage.objects.get(group=groups["open"])
    assert triage.owner == operator and triage.owned_at is not None
    row = AuditEntry.objects.get(action="group_update")
    assert (row.actor_name, row.reason) == (operator.username, "Acknowledge from the alerts page")
    html = body(client.get("/alerts/sent/"))
    assert "You acknowledged the failure group" in html
    assert f"by {operator.username} at <time" in _row(html, sent, groups["open"])


def test_mute_mutes_the_group_for_an_hour(alert):
    sent, groups, _ = alert
    operator = make_user("operator")

    answer = _press(client_for(operator), sent, groups["owned"], "mute", offset=0)

    assert answer.status_code == 302
    mute = Mute.objects.get()
    assert (mute.group, mute.queue, mute.created_by) == (groups["owned"], "", operator)
    left = mute.until - timezone.now()
    assert timedelta(minutes=59) < left <= timedelta(hours=1)
    assert AuditEntry.objects.get(action="mute_add").reason == "Mute 1 h from the alerts page"


def test_canary_makes_a_safe_replay_job_started_after_the_commit(
    alert, started, django_capture_on_commit_callbacks
):
    sent, groups, _ = alert
    operator = make_user("operator")

    with django_capture_on_commit_callbacks(execute=True):
        answer = _press(client_for(operator), sent, groups["open"], "canary")

    assert answer.status_code == 302
    job = Job.objects.get()
    assert started == [job.pk]
    assert job.action == "replay" and job.canary == 10
    assert json.loads(job.target_json) == "original"
    assert job.total == 2 and job.created_by == operator.username
    assert AuditEntry.objects.get(action="job_create").reason == "Canary from the alerts page"


def test_a_refused_action_says_why_without_a_500(alert, started):
    sent, groups, _ = alert
    Message.objects.filter(group=groups["open"]).update(status=Status.DISCARDED)  # none parked

    answer = _press(client_for(make_user("operator")), sent, groups["open"], "canary")

    assert 400 <= answer.status_code < 500
    assert "Not done:" in body(answer)
    assert not Job.objects.exists() and started == []


@pytest.mark.parametrize("change", [
    {"action": "delete"}, {"action": ""}, {"alert": "x"}, {"alert": "0"},
    {"group": "g" * 17}, {"group": ""}, {"offset": "-1"},
])  # fmt: skip
def test_bad_input_is_a_400(alert, change):
    sent, groups, _ = alert
    data = {"alert": sent.pk, "group": groups["open"], "action": "ack", **change}

    answer = post(client_for(make_user("operator")), "/alerts/sent/act/", data)

    assert answer.status_code == 400
    assert not GroupTriage.objects.filter(group=groups["open"]).exists()


def test_a_group_the_alert_did_not_name_or_an_alert_not_sent_is_refused(alert):
    sent, groups, _ = alert
    other = failure_group("invoices")
    client = client_for(make_user("operator"))

    unnamed = _press(client, sent, other, "ack")
    assert unnamed.status_code == 400
    assert "That alert did not name that failure group." in body(unnamed)

    missing = post(client, "/alerts/sent/act/", {"alert": sent.pk + 999, "group": other,
                                                 "action": "ack"})  # fmt: skip
    assert missing.status_code == 404
    assert not GroupTriage.objects.filter(group=other).exists()


def test_a_press_needs_csrf_and_post(alert):
    sent, groups, _ = alert
    client = client_for(make_user("operator"))
    data = {"alert": sent.pk, "group": groups["open"], "action": "ack"}

    assert client.post("/alerts/sent/act/", data).status_code == 403
    assert client.get("/alerts/sent/act/", data).status_code == 405
    assert not GroupTriage.objects.filter(group=groups["open"]).exists()


def test_anonymous_users_go_to_the_login_page():
    answer = Client().get("/alerts/sent/")
    assert answer.status_code == 302 and answer.url.startswith("/login/?next=/alerts/sent/")


def test_pages_of_twenty_newest_first():
    group = failure_group("orders")
    now = timezone.now()
    made = [sent_alert({group: 1}, at=now - timedelta(minutes=i)).pk for i in range(23)]
    client = client_for(make_user("viewer"))

    first = body(client.get("/alerts/sent/"))
    second = body(client.get("/alerts/sent/?offset=20"))

    assert [int(i) for i in re.findall(r'<table class="sent-alert" id="alert-(\d+)"', first)] == (
        made[:20])  # fmt: skip
    assert 'href="?offset=20"' in first and ">Older alerts</a>" in first
    assert [int(i) for i in re.findall(r'id="alert-(\d+)"', second)] == made[20:]
    assert client.get("/alerts/sent/?offset=-3").status_code == 400
    assert client.get("/alerts/sent/?offset=many").status_code == 400


def test_no_alert_sent_yet_says_so():
    html = body(client_for(make_user("viewer")).get("/alerts/sent/"))
    assert "No alert has been sent yet." in html


def test_untrusted_names_are_escaped():
    group = failure_group("orders")
    sent = sent_alert({group: 1}, channel=HOSTILE)
    Message.objects.filter(group=group).update(message_type=HOSTILE)

    html = body(client_for(make_user("operator")).get("/alerts/sent/"))

    assert HOSTILE not in html
    assert "&lt;b&gt;boom&lt;/b&gt;" in _row(html, sent, group)
