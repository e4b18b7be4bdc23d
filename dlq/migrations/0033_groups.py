"""Failure groups as a worklist (issue 27): who is on a group (GroupTriage), and each
group's counts per queue kept by triggers (GroupTally), as 0021 keeps the queues': the
groups API sorted a million messages by group on every request otherwise.

Statement-level triggers with transition tables write one tally row per statement, group
and queue, in the writing transaction, so the sums are exact at once: a group whose last
parked message was replayed has nothing parked in the same commit. Messages without a
group (none is stored so) are left out. The SQL is frozen here, as a migration's must be.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

PARKED = "parked"
TALLY = (
    'dlq_grouptally ("group", vhost, queue, stored, parked, first_received_at,'
    " last_received_at)"
)
FUNCTIONS = {
    "dlq_group_tally_insert": f"""
        INSERT INTO {TALLY}
        SELECT "group", vhost, queue, count(*), count(*) FILTER (WHERE status = '{PARKED}'),
               min(received_at), max(received_at)
        FROM new_rows WHERE "group" <> '' GROUP BY "group", vhost, queue;
    """,
    "dlq_group_tally_update": f"""
        INSERT INTO {TALLY}
        SELECT "group", vhost, queue, sum(s), sum(p), NULL, NULL FROM (
            SELECT "group", vhost, queue, -1 AS s, -(status = '{PARKED}')::int AS p
            FROM old_rows WHERE "group" <> ''
            UNION ALL
            SELECT "group", vhost, queue, 1, (status = '{PARKED}')::int
            FROM new_rows WHERE "group" <> ''
        ) AS change
        GROUP BY "group", vhost, queue HAVING sum(s) <> 0 OR sum(p) <> 0;
    """,
    "dlq_group_tally_delete": f"""
        INSERT INTO {TALLY}
        SELECT "group", vhost, queue, -count(*), -count(*) FILTER (WHERE status = '{PARKED}'),
               NULL, NULL
        FROM old_rows WHERE "group" <> '' GROUP BY "group", vhost, queue;
    """,
    "dlq_group_tally_truncate": "DELETE FROM dlq_grouptally;",
}
TRIGGERS = {
    "dlq_group_tally_insert": "AFTER INSERT ON dlq_message REFERENCING NEW TABLE AS new_rows",
    "dlq_group_tally_update": (
        "AFTER UPDATE ON dlq_message REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows"
    ),
    "dlq_group_tally_delete": "AFTER DELETE ON dlq_message REFERENCING OLD TABLE AS old_rows",
    "dlq_group_tally_truncate": "AFTER TRUNCATE ON dlq_message",
}
BACKFILL = f"""
    INSERT INTO {TALLY}
    SELECT "group", vhost, queue, count(*), count(*) FILTER (WHERE status = '{PARKED}'),
           min(received_at), max(received_at)
    FROM dlq_message WHERE "group" <> '' GROUP BY "group", vhost, queue
"""


def install(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name, body in FUNCTIONS.items():
        schema_editor.execute(
            f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql"
            f" AS $$ BEGIN {body} RETURN NULL; END $$"
        )
        schema_editor.execute(
            f"CREATE TRIGGER {name} {TRIGGERS[name]} FOR EACH STATEMENT"
            f" EXECUTE FUNCTION {name}()"
        )
    schema_editor.execute(BACKFILL)


def uninstall(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in FUNCTIONS:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {name} ON dlq_message")
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {name}()")


class Migration(migrations.Migration):

    dependencies = [
        ('dlq', '0032_topology_acknowledgement'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AlterField(
            model_name='auditentry',
            name='action',
            field=models.CharField(choices=[('edit', 'Edit a message'), ('replay', 'Replay a message'), ('discard', 'Discard a message'), ('restore', 'Restore a message'), ('job_create', 'Start a bulk job'), ('job_cancel', 'Cancel a bulk job'), ('job_finish', 'A bulk job finishes'), ('token_create', 'Create an API token'), ('token_revoke', 'Revoke an API token'), ('mute_add', 'Mute alerts'), ('mute_remove', 'Remove an alert mute'), ('sign_in', 'Sign in'), ('sign_in_failed', 'Sign-in failed'), ('sign_in_locked', 'Sign-in locked out'), ('sign_in_refused', 'Sign-in refused'), ('audit_purge', 'Purge old audit rows'), ('channel_change', 'Change an alert channel'), ('replay_target_change', 'Change a replay override'), ('user_create', 'Create a user'), ('user_deactivate', 'Deactivate a user'), ('user_activate', 'Reactivate a user'), ('topology_ack', 'Acknowledge a topology warning'), ('topology_unack', 'Withdraw a topology acknowledgement'), ('group_update', 'Change a failure group')], max_length=32),
        ),
        migrations.CreateModel(
            name='GroupTally',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('group', models.CharField(max_length=16)),
                ('vhost', models.CharField(max_length=255)),
                ('queue', models.CharField(max_length=255)),
                ('stored', models.BigIntegerField()),
                ('parked', models.BigIntegerField()),
                ('first_received_at', models.DateTimeField(null=True)),
                ('last_received_at', models.DateTimeField(null=True)),
            ],
            options={
                'indexes': [models.Index(fields=['group'], name='grouptally_group')],
            },
        ),
        migrations.CreateModel(
            name='GroupTriage',
            fields=[
                ('group', models.CharField(max_length=16, primary_key=True, serialize=False)),
                ('note', models.TextField(blank=True, default='')),
                ('ticket_url', models.CharField(blank=True, default='', max_length=2000)),
                ('hold_until', models.DateTimeField(blank=True, null=True)),
                ('held_from', models.DateTimeField(blank=True, null=True)),
                ('held_to', models.DateTimeField(blank=True, null=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('owner', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
            ],
            options={
                'indexes': [models.Index(condition=models.Q(('held_from__isnull', False)), fields=['held_from'], name='grouptriage_held')],
            },
        ),
        migrations.RunPython(install, uninstall),
    ]
