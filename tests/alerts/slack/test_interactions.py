"""Pressing a Slack alert's buttons (contract: "Alerts you can act on"), over real HTTP: the
stand-in (tests/slackapi.py) receives the alert, presses as Slack does against the console
(pytest-django's live server) and serves the response URL the console answers through.

The answer's post is the Celery task's own code run in the web process here
(`answered_here`); test_worker.py has a real worker do it. Every refused request is
checked for what it did not do: no owner, mute, job, audit row, link or reply."""

import json
import logging
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from dlq.alerts import links
from dlq.models import AuditEntry, ChatDelivery, GroupTriage, Job, LinkCode, Message, Mute
from dlq.tasks import alerts as alert_tasks
from tests.alerts.slack.conftest import group_of, linked
from tests.factories import client_for, make_user
from tests.slackapi import buttons

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("answered_here")]


def _ref(alert: dict, n: int = 0) -> str:
    return buttons(alert)[n]["dlq_ack"]["value"]


def _nothing_done() -> None:
    assert not GroupTriage.objects.filter(owner__isnull=False).exists()
    assert not Mute.objects.exists() and not Job.objects.exists()
    assert not AuditEntry.objects.filter(action__in=["alert_press", "group_update"]).exists()


def _detail(entry: AuditEntry) -> dict:
    return json.loads(entry.detail)


def test_a_linked_operators_acknowledge_makes_them_the_owner(slack, alerted, live_server):
    oper = linked("operator", "U0OPER", "oper")
    ref = _ref(alerted)
    group = group_of(ref)
    url = slack.response_url()

    answer = slack.press(live_server.url, slack.payload("dlq_ack", ref, response_url=url))

    assert (answer.status, answer.body) == (200, b"")
    assert answer.seconds < 3
    api = client_for(make_user("viewer"), token=True)
    assert api.get(f"/api/v1/groups/{group}").json()["owner"] == oper.username
    [sent] = api.get("/api/v1/alerts").json()["results"]
    states = {g["group"]: (g["state"], g["acknowledged_by"]) for g in sent["groups"]}
    assert states[group] == ("acknowledged", oper.username)
    assert states[group_of(_ref(alerted, 1))] == ("open", None)
    update = AuditEntry.objects.get(action="group_update")
    pressed = AuditEntry.objects.get(action="alert_press")
    assert update.actor_name == pressed.actor_name == oper.username
    assert update.request_id == pressed.request_id
    said = {"via": "slack", "chat_user": "U0OPER", "action": "ack", "group": group, "alert": 0}
    assert _detail(pressed) | {"alert": 0} == said
    # The alert in Slack is replaced: its groups' states now, and who did what.
    [reply] = slack.responses(url)
    assert reply["replace_original"] is True
    assert reply["blocks"][-1]["elements"][0]["text"] == (
        f"`{oper.username}` acknowledged `OrderPlaced · TimeoutError`"
    )
    sections = [b["text"]["text"] for b in reply["blocks"] if b["type"] == "section"]
    assert any(f"_acknowledged by_ `{oper.username}`" in t and "TimeoutError" in t
               for t in sections)  # fmt: skip
    assert len(buttons(reply)) == 2  # still pressable


def test_mute_1_h_mutes_the_group(slack, alerted, live_server):
    oper = linked("operator", "U0OPER")
    ref = _ref(alerted, 1)

    answer = slack.press(live_server.url, slack.payload("dlq_mute", ref))

    assert answer.status == 200
    mute = Mute.objects.get()
    assert (mute.group, mute.queue, mute.created_by_name) == (group_of(ref), "", oper.username)
    assert abs(mute.until - (timezone.now() + timedelta(hours=1))) < timedelta(minutes=1)
    assert _detail(AuditEntry.objects.get(action="alert_press"))["action"] == "mute"
    [reply] = slack.wait_responses(1)
    assert "muted for 1 h" in reply["blocks"][-1]["elements"][0]["text"]


def test_canary_creates_a_safe_replay_job_started_after_commit(slack, alerted, live_server,
                                                               started):  # fmt: skip
    oper = linked("operator", "U0OPER")
    ref = _ref(alerted)

    answer = slack.press(live_server.url, slack.payload("dlq_canary", ref))

    assert answer.status == 200
    job = Job.objects.get()
    assert (job.action, job.canary, job.max_returns, job.require_consumers, job.created_by) == (
        "replay", 10, 0, True, oper.username)  # fmt: skip
    assert (json.loads(job.target_json), json.loads(job.filter_json)) == (
        "original", {"group": group_of(ref)})  # fmt: skip
    assert started == [job.pk]
    assert AuditEntry.objects.get(action="alert_press").job_id == job.pk


def test_open_is_a_link_and_does_nothing(slack, alerted, live_server):
    linked("operator", "U0OPER")

    answer = slack.press(live_server.url, slack.payload("dlq_open"))

    assert answer.status == 200
    _nothing_done()
    assert slack.responses() == []


# --- refused ---------------------------------------------------------------------------


def _signed_wrong(slack, body):
    headers = slack.sign(body)
    headers["X-Slack-Signature"] = "v0=" + "0" * 64
    return headers


def _without(headers: dict, name: str) -> dict:
    return {k: v for k, v in headers.items() if k != name}


REFUSALS = {
    "bad signature": _signed_wrong,
    "old timestamp": lambda slack, body: slack.sign(body, int(time.time()) - 301),
    "future timestamp": lambda slack, body: slack.sign(body, int(time.time()) + 301),
    "unsigned": lambda slack, body: {},
    "no timestamp": lambda slack, body: _without(slack.sign(body), "X-Slack-Request-Timestamp"),
    "garbled": lambda slack, body: {**slack.sign(body), "X-Slack-Request-Timestamp": "12ab"},
    "another secret": lambda slack, body: {
        **slack.sign(body),
        "X-Slack-Signature": "v1=" + "a" * 64,
    },  # fmt: skip
}


@pytest.mark.parametrize("how", REFUSALS)
def test_a_request_slack_did_not_sign_now_is_refused_and_nothing_happens(
    slack, alerted, live_server, how, caplog
):
    linked("operator", "U0OPER")
    body = slack.form(slack.payload("dlq_ack", _ref(alerted)))

    with caplog.at_level(logging.WARNING, logger="dlq.slack"):
        answer = slack.send(live_server.url, body, REFUSALS[how](slack, body))

    assert answer.status == 401
    _nothing_done()
    assert not ChatDelivery.objects.exists() and slack.responses() == []
    [note] = [r for r in caplog.records if r.name == "dlq.slack"]
    assert _ref(alerted) not in note.getMessage() + str(note.__dict__)


def test_the_same_signed_request_twice_is_done_once(slack, alerted, live_server):
    linked("operator", "U0OPER")
    body = slack.form(slack.payload("dlq_mute", _ref(alerted)))
    headers = slack.sign(body)

    first = slack.send(live_server.url, body, headers)
    again = slack.send(live_server.url, body, headers)

    assert (first.status, again.status) == (200, 401)
    assert Mute.objects.count() == 1
    assert AuditEntry.objects.filter(action="alert_press").count() == 1
    assert len(slack.responses()) == 1
    assert ChatDelivery.objects.get().key == "slack:" + headers["X-Slack-Signature"][3:]


def test_a_viewers_press_is_refused_with_the_reason(slack, alerted, live_server):
    viewer = linked("viewer", "U0VIEW")

    answer = slack.press(live_server.url, slack.payload("dlq_ack", _ref(alerted), user_id="U0VIEW"))

    assert answer.status == 200
    _nothing_done()
    [reply] = slack.responses()
    assert reply["response_type"] == "ephemeral" and reply["replace_original"] is False
    assert reply["text"] == f"{viewer.username} is a viewer: a viewer may not Acknowledge."


def test_an_unlinked_press_gets_a_one_time_link_only_for_them(slack, alerted, live_server):
    pressed = slack.payload("dlq_canary", _ref(alerted), user_id="U0NEW", username="newbie")

    answer = slack.press(live_server.url, pressed)

    assert answer.status == 200
    _nothing_done()
    [reply] = slack.responses()
    assert reply["response_type"] == "ephemeral"
    assert "10 minutes" in reply["text"] and "not linked" in reply["text"]
    prefix = "https://console.example/account/link/slack/"
    code = reply["text"].split(prefix, 1)[1].split("/", 1)[0]
    found = links.pending(code, "slack")  # valid, unused, for this Slack user
    assert (found.chat_user, found.chat_name) == ("U0NEW", "newbie")
    assert LinkCode.objects.count() == 1


def test_a_forged_value_is_refused_with_the_reason(slack, alerted, live_server):
    linked("operator", "U0OPER")

    answer = slack.press(live_server.url, slack.payload("dlq_ack", "forged-ref-0000"))

    assert answer.status == 200
    _nothing_done()
    assert slack.responses()[0]["text"] == (
        "This alert is not one this console sent (or it was removed)."
    )


def test_a_press_for_a_group_whose_messages_are_gone_says_so(slack, alerted, live_server):
    linked("operator", "U0OPER")
    ref = _ref(alerted)
    Message.objects.filter(group=group_of(ref)).delete()

    answer = slack.press(live_server.url, slack.payload("dlq_ack", ref))

    assert answer.status == 200
    _nothing_done()
    assert slack.responses()[0]["text"] == "Nothing of this failure group is stored any more."


@pytest.mark.parametrize(
    ("body", "status"),
    [
        (b"payload=" + b"x" * (64 * 1024), 413),
        (b"payload=%7Bnot+json", 400),
        (b"payload=%5B%5D", 400),
        (b"nopayload=1", 400),
        (b"payload=" + b"%5B" * 5000 + b"%5D" * 5000, 400),
        (b"\xff\xfe", 400),
    ],
    ids=["oversized", "malformed JSON", "not an object", "no payload", "deep", "not UTF-8"],
)
def test_a_signed_but_bad_body_is_a_clear_4xx(slack, alerted, live_server, body, status):
    linked("operator", "U0OPER")

    answer = slack.send(live_server.url, body, slack.sign(body))

    assert answer.status == status
    _nothing_done()


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"type": "view_submission"}, "only block_actions"),
        ({"actions": [{"action_id": "dlq_delete_everything", "value": "x"}]}, "not one of"),
        ({"actions": []}, "not one of"),
        ({"user": {"id": 7}}, "lacks the user"),
        ({"response_url": None}, "lacks the user"),
    ],
)
def test_a_signed_payload_that_is_not_a_press_of_ours_is_400(slack, alerted, live_server,
                                                              change, why):  # fmt: skip
    linked("operator", "U0OPER")
    payload = slack.payload("dlq_ack", _ref(alerted)) | change

    answer = slack.press(live_server.url, payload)

    assert answer.status == 400 and why in answer.body.decode()
    _nothing_done()


def test_without_a_signing_secret_the_endpoint_is_not_there(slack, live_server, settings):
    settings.DLQ_SLACK_SIGNING_SECRET = ""

    answer = slack.press(live_server.url, slack.payload("dlq_ack", "x"))

    assert answer.status == 404 and b"DLQ_SLACK_SIGNING_SECRET" in answer.body


def test_a_response_url_inside_the_network_is_not_posted_to(slack, alerted, live_server,
                                                             settings, caplog):  # fmt: skip
    linked("operator", "U0OPER")
    url = slack.response_url()
    settings.DLQ_ALERT_ALLOWED_NETS = []  # loopback is internal again

    with caplog.at_level(logging.WARNING, logger="dlq.slack"):
        answer = slack.press(live_server.url, slack.payload("dlq_ack", _ref(alerted),
                                                            response_url=url))  # fmt: skip

    assert answer.status == 200
    assert GroupTriage.objects.filter(owner__isnull=False).count() == 1  # the press was done
    assert slack.responses() == []
    [note] = [r for r in caplog.records if r.name == "dlq.slack"]
    assert "internal address" in note.error
    assert url not in note.getMessage() + note.error and "/respond/" not in note.error


@pytest.mark.parametrize(("status", "posts", "waits"), [(500, 2, [2.0]), (404, 1, [])])
def test_a_reply_slack_fails_is_tried_again_later_unless_refused_for_good(
    slack, alerted, live_server, monkeypatch, status, posts, waits
):
    later = []  # the next try, run at once here (a worker runs it after the countdown)
    respond = alert_tasks.slack_respond
    monkeypatch.setattr(respond, "apply_async", lambda args, countdown: later.append(countdown)
                        or respond.apply(args))  # fmt: skip
    linked("operator", "U0OPER")
    url = slack.response_url()
    slack.server.reply(status)

    answer = slack.press(live_server.url, slack.payload("dlq_ack", _ref(alerted),
                                                        response_url=url))  # fmt: skip

    assert answer.status == 200
    replies = slack.responses(url)
    assert len(replies) == posts and all(r["replace_original"] for r in replies)
    assert later == waits
