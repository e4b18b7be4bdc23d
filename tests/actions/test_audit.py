"""The audit trail: one row per action, append-only in the database itself, safe CSV."""

import csv
import io

import pytest
from django.db import DatabaseError, connection, transaction

from dlq import audit
from dlq.actions import message as message_actions
from dlq.jobs import control
from dlq.models.actions import AuditEntry
from tests.factories import make_messages, make_user

pytestmark = pytest.mark.django_db(transaction=True)


def _new_rows(before: int) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(id__gt=before).order_by("id"))


def _last_id() -> int:
    return AuditEntry.objects.order_by("-id").values_list("id", flat=True).first() or 0


def test_it_writes_exactly_one_row_per_action(top):
    work = top.queue("work")
    user = make_user("operator")
    a, b, c = make_messages(3, queue=top.name("dlq"), died_in=work)
    steps = [
        (lambda: message_actions.edit(a.pk, user, "fix", body_text='{"order": 2}'), "edit", [a.pk]),
        (
            lambda: message_actions.replay_one(a.pk, "failed_queue", user, "go", "req-1"),
            "replay",
            [a.pk],
        ),
        (lambda: message_actions.discard(b.pk, user, "junk"), "discard", [b.pk]),
        (lambda: message_actions.restore(b.pk, user, "keep"), "restore", [b.pk]),
    ]
    for step, action, message_ids in steps:
        before = _last_id()
        step()
        (row,) = _new_rows(before)
        assert (row.action, row.message_ids, row.job_id) == (action, message_ids, None)
        assert (row.actor_id, row.actor_name) == (user.pk, user.username)
        assert row.reason
    replay_row = AuditEntry.objects.get(action="replay")
    assert replay_row.request_id == "req-1"
    assert '"outcome": "confirmed"' in replay_row.detail

    before = _last_id()
    job = control.create_job(user, "discard", ids=[b.pk, c.pk], reason="bulk junk")
    (row,) = _new_rows(before)
    assert (row.action, row.job_id, row.reason, row.message_ids) == ("job_create", job.pk,
                                                                      "bulk junk", [])  # fmt: skip
    before = _last_id()
    control.cancel_job(job.pk, "system")
    (row,) = _new_rows(before)
    assert (row.action, row.job_id, row.actor_id, row.actor_name) == ("job_cancel", job.pk,
                                                                      None, "system")  # fmt: skip


def test_it_keeps_the_actors_name_when_the_user_is_deleted():
    user = make_user("operator")
    (m,) = make_messages(1)
    message_actions.discard(m.pk, user, "junk")
    name = user.username
    user.delete()

    row = AuditEntry.objects.get()
    assert row.actor_name == name


def test_the_database_refuses_to_change_or_delete_audit_rows():
    (m,) = make_messages(1)
    message_actions.discard(m.pk, "erin", "junk")
    row = AuditEntry.objects.get()

    attempts = [
        lambda: AuditEntry.objects.filter(pk=row.pk).update(reason="nothing happened"),
        lambda: AuditEntry.objects.filter(pk=row.pk).delete(),
        lambda: row.delete(),
    ]
    for attempt in attempts:
        with pytest.raises(DatabaseError) as refused, transaction.atomic():
            attempt()
        assert "append-only" in str(refused.value)
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE dlq_auditentry SET actor_name = 'mallory'")
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("DELETE FROM dlq_auditentry")

    assert AuditEntry.objects.get().reason == "junk"
    assert AuditEntry.objects.get().actor_name == "erin"


def test_it_exports_csv_without_formula_injection():
    ms = make_messages(5)
    evil = ['=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)", " \t=1"]
    for m, reason in zip(ms, evil, strict=True):
        message_actions.discard(m.pk, "\t=cmd|' /C calc'!A0", reason, request_id="=1+2")

    rows = list(csv.reader(io.StringIO(audit.to_csv(AuditEntry.objects.order_by("id")))))

    assert rows[0] == audit.CSV_COLUMNS
    column = {name: i for i, name in enumerate(audit.CSV_COLUMNS)}
    assert [r[column["reason"]] for r in rows[1:]] == [
        "'=HYPERLINK(\"http://x\")", "'+1+1", "'-2+3", "'@SUM(A1)", "'=1"]  # fmt: skip
    assert {r[column["actor"]] for r in rows[1:]} == {"'\t=cmd|' /C calc'!A0"}
    assert {r[column["request_id"]] for r in rows[1:]} == {"'=1+2"}
    assert not any(cell.startswith(tuple("=+-@\t\r")) for r in rows[1:] for cell in r)
    assert [r[column["message_ids"]] for r in rows[1:]] == [f"[{m.pk}]" for m in ms]
