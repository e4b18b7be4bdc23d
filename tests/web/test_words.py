"""Issue 26, points 4 and 7: a group keeps its name everywhere (its page's header, the list's
caption, the bulk review, the job page) and the audit log reads as sentences with diffs."""

import re
from datetime import UTC, datetime

import pytest

from dlq import audit
from dlq.actions import overrides
from dlq.jobs import control, running
from dlq.models import Message, Status
from dlq.models.actions import AuditAction, AuditEntry
from tests.factories import make_messages
from tests.uiops import a_job, body

pytestmark = pytest.mark.django_db


def read(response) -> str:
    """The page's text as a person reads it: no tags, spaces folded."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", body(response)))


@pytest.fixture
def payments():
    """26 CapturePayment messages rejected in demo.payments; 2 of them discarded."""
    rows = make_messages(26, queue="demo.payments.dlq", died_in="demo.payments",
                         type="CapturePayment",
                         headers={"MT-Fault-ExceptionType": "CardDeclined",
                                  "MT-Fault-Message": "card declined\nat line 3"})  # fmt: skip
    Message.objects.filter(pk__in=[rows[0].pk, rows[1].pk]).update(status=Status.DISCARDED)
    return rows


def test_a_group_page_has_a_header_with_name_counts_times_queues_and_actions(operator, payments):
    group = payments[0].group
    response = operator.get(f"/groups/{group}/")
    assert response.status_code == 200
    text = read(response)
    name = Message.objects.get(pk=payments[0].pk)
    h1 = re.search(r'<h1 id="h-group"[^>]*>(.*?)</h1>', body(response), re.S).group(1)
    assert re.sub(r"<[^>]+>", "", h1) == "CapturePayment · CardDeclined: card declined"
    assert group not in h1  # the name, never the hash
    assert "parked 24 · discarded 2" in text
    assert "First seen" in text and "Last seen" in text and " UTC" in text
    assert "demo.payments.dlq" in text and name.queue == "demo.payments.dlq"
    page = body(response)
    assert f"action=replay&amp;all=1&amp;status=parked&amp;group={group}" in page
    assert "Replay 24 parked…" in text and "Discard 24 parked…" in text
    assert "The newest 20 of 26 messages of CapturePayment · CardDeclined: card declined" in text


def test_a_viewer_sees_the_header_without_the_actions(viewer, payments):
    text = read(viewer.get(f"/groups/{payments[0].group}/"))
    assert "CapturePayment · CardDeclined" in text and "Replay 24" not in text


def test_an_unknown_group_is_a_404(viewer):
    assert viewer.get("/groups/0000000000000000/").status_code == 404


def test_the_groups_page_opens_the_group_page(viewer, payments):
    page = body(viewer.get("/groups/?window=all"))
    assert f'href="/groups/{payments[0].group}/"' in page


def test_the_list_says_its_filter_in_words(viewer, payments):
    group = payments[0].group
    text = read(viewer.get(f"/messages/?group={group}&status=parked"))
    assert "Newest first: parked messages of CapturePayment · CardDeclined: card declined" in text


def test_the_job_page_says_its_selection_in_words(operator, payments):
    frozen = datetime(2030, 1, 1, tzinfo=UTC)
    job = control.create_job("oper", "replay", filters={"group": payments[0].group,
                          "received_before": frozen}, target="failed_queue", rate_per_s=2,
                          reason="card provider back")  # fmt: skip
    text = read(operator.get(f"/jobs/{job.pk}/"))
    assert ("24 parked messages of CapturePayment · CardDeclined: card declined"
            " received before 2030-01-01 00:00:00 UTC") in text  # fmt: skip
    assert '{"group"' not in text.split("The filter as stored")[0]


def test_audit_rows_read_as_sentences(viewer, payments):
    job = control.create_job("oper", "replay", filters={"group": payments[0].group},
                          target="failed_queue", rate_per_s=2, reason="provider back")  # fmt: skip
    text = read(viewer.get("/audit/"))
    assert ("oper started replaying 24 parked messages of CapturePayment · CardDeclined: card"
            f" declined to the failed queue at 2/s: job {job.pk}") in text  # fmt: skip


def test_a_finished_job_has_a_row_with_its_outcomes(viewer):
    first, second, third = make_messages(3)
    Message.objects.filter(pk=third.pk).update(status=Status.DISCARDED)
    job = a_job([first.pk, second.pk, third.pk], action="discard")
    assert running.run_job(job.pk) == "done"
    row = AuditEntry.objects.get(action=AuditAction.JOB_FINISH)
    assert row.job_id == job.pk and row.actor_name == "worker"
    text = read(viewer.get("/audit/"))
    assert (f"job {job.pk} (discard) finished, done with failures: 2 discarded,"
            " 1 skipped (no longer parked) of 3 messages") in text  # fmt: skip
    assert f"tests started discarding 3 chosen messages: job {job.pk}" in text


def test_single_actions_and_changes_read_as_sentences_with_a_diff(viewer):
    (m,) = make_messages(1)
    audit.record("alice", AuditAction.DISCARD, "dup", [m.pk])
    made = overrides.save("admin", "route orders", "orders.*", "orders.events", "order.x")
    overrides.save("admin", "new key", "orders.*", "orders.events", "order.y", override_id=made.pk)
    response = viewer.get("/audit/")
    text = read(response)
    assert f"alice discarded message {m.pk}" in text
    assert "admin added the replay override for orders.*" in text
    assert "admin changed the replay override for orders.*" in text
    page = body(response)
    # before → after per field, only what changed; the raw JSON folded away
    assert re.search(
        r'<code>routing_key</code></td><td><pre class="before">order.x</pre></td>'
        r'<td aria-hidden="true">→</td><td><pre class="after">order.y</pre>',
        page,
    )
    assert "<summary>Raw JSON</summary>" in page


def test_the_action_filter_offers_words(viewer):
    page = body(viewer.get("/audit/"))
    assert '<option value="job_finish">A bulk job finishes</option>' in page
    assert '<option value="replay">Replay a message</option>' in page


def test_the_csv_export_stays_machine_readable(viewer):
    audit.record("alice", AuditAction.JOB_CREATE, "r", job_id=5, detail={"action": "replay"})
    csv_text = b"".join(viewer.get("/audit/?format=csv").streaming_content).decode()
    header = "id,at,actor,action,message_ids,job_id,reason,diff,detail,request_id"
    assert csv_text.splitlines()[0] == header
    assert ",alice,job_create,[],5,r,," in csv_text


def test_hostile_names_stay_escaped_in_the_words(viewer):
    (m,) = make_messages(1, queue="<script>q</script>", type="<img src=x>")
    text = body(viewer.get(f"/messages/?queue={m.queue}&message_type={m.message_type}"))
    assert "<script>q" not in text and "<img src=x>" not in text
    assert "&lt;script&gt;q&lt;/script&gt;" in text


def test_chat_presses_and_links_read_as_sentences(viewer, payments):
    group = payments[2].group
    audit.record("oper", AuditAction.ALERT_PRESS, "Acknowledge pressed in Telegram",
                 detail={"via": "telegram", "chat_user": "4242", "action": "ack",
                         "group": group, "alert": 7})  # fmt: skip
    audit.record("oper", AuditAction.CHAT_LINK, "linked",
                 detail={"via": "slack", "chat_user": "U123", "chat_name": "<b>ana</b>",
                         "user": "oper"})  # fmt: skip
    audit.record("admin", AuditAction.CHAT_UNLINK, "gone",
                 detail={"via": "telegram", "chat_user": "4242", "chat_name": "",
                         "user": "oper"})  # fmt: skip
    response = viewer.get("/audit/")
    text = read(response)
    assert ("oper pressed Acknowledge on failure group CapturePayment · CardDeclined: card"
            " declined in Telegram (as Telegram user 4242)") in text  # fmt: skip
    assert "oper linked Slack user U123 (&lt;b&gt;ana&lt;/b&gt;) to console user oper" in text
    assert "admin unlinked Telegram user 4242 from console user oper" in text
    assert "<b>ana</b>" not in body(response)
