"""A deployment whose processes connect as a role that does not own the tables (security
review finding 9): that role cannot delete, change, truncate or bypass the audit trail's
append-only guard, yet the drainer drains and audit retention runs, through the one
narrow, audited path (dlq_purge_audit). The grants are the ones `dlq_grants` prints."""

import os
import subprocess
import sys
import uuid
from datetime import timedelta

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from dlq.actions import message as message_actions
from dlq.management.commands.dlq_grants import grants
from dlq.models import AuditEntry, Message
from tests import ROOT
from tests.drainproc import run_once
from tests.factories import make_message

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def app_role():
    """A LOGIN role with exactly the grants `manage.py dlq_grants` prints."""
    role = f"dlq_app_{uuid.uuid4().hex[:8]}"
    database = connection.settings_dict["NAME"]
    printed = subprocess.run(
        [sys.executable, "manage.py", "dlq_grants", role], cwd=ROOT,
        capture_output=True, text=True, check=True,
        env={**os.environ, "DATABASE_URL": _url("root", database)},
    ).stdout.splitlines()  # fmt: skip
    assert printed == grants(role, database)
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE ROLE {role} LOGIN")
        for statement in printed:
            cursor.execute(statement)
    yield role
    with connection.cursor() as cursor:
        cursor.execute(f"DROP OWNED BY {role}")
        cursor.execute(f"DROP ROLE {role}")
        # Not a Django model, so no test flush resets it: back to "retention off".
        cursor.execute("UPDATE dlq_auditretention SET days = NULL WHERE id = 1")


def _url(user: str, database: str) -> str:
    return f"postgres://{user}@127.0.0.1:5432/{database}"


def as_role(role: str, sql: str, params=()):
    database = connection.settings_dict["NAME"]
    url = _url(role, database).replace("postgres://", "postgresql://")
    with psycopg.connect(url) as conn, conn.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.description else None


@pytest.mark.parametrize(
    ("sql", "refusal"),
    [
        ("DELETE FROM dlq_auditentry", "permission denied"),
        ("UPDATE dlq_auditentry SET reason = 'rewritten'", "permission denied"),
        ("TRUNCATE dlq_auditentry", "permission denied"),
        ("ALTER TABLE dlq_auditentry DISABLE TRIGGER dlq_audit_append_only", "must be owner"),
        ("DROP TRIGGER dlq_audit_append_only ON dlq_auditentry", "must be owner"),
        ("SET session_replication_role = replica", "permission denied"),
        ("SELECT set_config('dlq.audit_purge', 'on', true);"
         " DELETE FROM dlq_auditentry", "permission denied"),
    ],
)  # fmt: skip
def test_the_role_cannot_touch_or_bypass_the_audit_trail(app_role, sql, refusal):
    message = make_message()
    message_actions.discard(message.pk, "ops", "noise")
    before = list(AuditEntry.objects.values_list("id", "reason"))

    with pytest.raises(psycopg.Error, match=refusal):
        as_role(app_role, sql)

    assert list(AuditEntry.objects.values_list("id", "reason")) == before


def test_the_role_works_the_console_and_purges_only_through_the_audited_path(
    app_role, top, channel
):
    message = make_message()
    message_actions.discard(message.pk, "ops", "noise")
    today = AuditEntry.objects.get()

    # The drainer, connected as the role, stores what it drains.
    park, dlx = top.parking()
    channel.basic_publish(dlx, "", b'{"order": 7}')
    database = connection.settings_dict["NAME"]
    drained = run_once([park], _url(app_role, database))
    assert drained.proc.returncode == 0, drained.log_text[-2000:]
    assert Message.objects.filter(queue=park).count() == 1

    # Retention, as the role: nothing while the owner has not set a retention, and then
    # only rows older than it, through dlq_purge_audit, which records itself.
    aged = AuditEntry.objects.create(at=timezone.now() - timedelta(days=40), actor_name="ops",
                                     action="discard")  # fmt: skip
    with pytest.raises(psycopg.Error, match="audit retention is off"):
        as_role(app_role, "SELECT dlq_purge_audit(now() - interval '1 day', 1000)")
    with pytest.raises(psycopg.Error, match="permission denied"):
        as_role(app_role, "UPDATE dlq_auditretention SET days = 1")
    with connection.cursor() as cursor:  # the owner's decision
        cursor.execute("UPDATE dlq_auditretention SET days = 30 WHERE id = 1")
    with pytest.raises(psycopg.Error, match="younger than 30 days are kept"):
        as_role(app_role, "SELECT dlq_purge_audit(now() + interval '1 second', 1000)")

    purged = as_role(app_role, "SELECT dlq_purge_audit(now() - interval '30 days', 1000)")

    assert purged == [(1,)]
    assert not AuditEntry.objects.filter(pk=aged.pk).exists()
    assert AuditEntry.objects.filter(pk=today.pk).exists()  # younger: kept
    record = AuditEntry.objects.get(action="audit_purge")
    assert record.actor_name == "retention" and '"purged" : 1' in record.detail
    with pytest.raises(psycopg.Error, match="batch must be"):
        as_role(app_role, "SELECT dlq_purge_audit(now() - interval '31 days', 0)")
