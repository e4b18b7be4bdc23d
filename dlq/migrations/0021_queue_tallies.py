"""Per-queue counts that cost no scan: the overview and GET /api/v1/queues counted a
million rows on every request (an index-only scan, about 150 ms).

On PostgreSQL, statement-level triggers with transition tables write one tally row per
statement and queue into dlq_queuetally, in the writing transaction: a drainer's batch
(COPY), a job's settle, a discard, retention. Every way a row is written is counted, the
counts are exact at any isolation (a statement's tally commits or rolls back with it), and
writers only insert, so two drainers never wait on a shared counter row.
dlq/messages/tallies.py reads the sums and folds the rows. Other databases count at read
time, as before.

Creating the triggers locks dlq_message against writes until this migration commits, so the
first tallies, counted from the table in the same transaction, miss nothing and count
nothing twice. The SQL is frozen here, as a migration's must be.
"""

from django.db import migrations, models

PARKED = "parked"

FUNCTIONS = {
    # A batch of new rows: how many per queue, how many parked, the newest arrival.
    "dlq_tally_insert": f"""
        INSERT INTO dlq_queuetally (vhost, queue, stored, parked, last_received_at)
        SELECT vhost, queue, count(*), count(*) FILTER (WHERE status = '{PARKED}'),
               max(received_at)
        FROM new_rows GROUP BY vhost, queue;
    """,
    # Status changes: the old rows leave their counts, the new ones enter theirs; queues
    # whose counts did not change get no row.
    "dlq_tally_update": f"""
        INSERT INTO dlq_queuetally (vhost, queue, stored, parked, last_received_at)
        SELECT vhost, queue, sum(s), sum(p), NULL FROM (
            SELECT vhost, queue, -1 AS s, -(status = '{PARKED}')::int AS p FROM old_rows
            UNION ALL
            SELECT vhost, queue, 1, (status = '{PARKED}')::int FROM new_rows
        ) AS change
        GROUP BY vhost, queue HAVING sum(s) <> 0 OR sum(p) <> 0;
    """,
    "dlq_tally_delete": f"""
        INSERT INTO dlq_queuetally (vhost, queue, stored, parked, last_received_at)
        SELECT vhost, queue, -count(*), -count(*) FILTER (WHERE status = '{PARKED}'), NULL
        FROM old_rows GROUP BY vhost, queue;
    """,
    "dlq_tally_truncate": "DELETE FROM dlq_queuetally;",
}
TRIGGERS = {
    "dlq_tally_insert": "AFTER INSERT ON dlq_message REFERENCING NEW TABLE AS new_rows",
    "dlq_tally_update": (
        "AFTER UPDATE ON dlq_message REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows"
    ),
    "dlq_tally_delete": "AFTER DELETE ON dlq_message REFERENCING OLD TABLE AS old_rows",
    "dlq_tally_truncate": "AFTER TRUNCATE ON dlq_message",
}
BACKFILL = f"""
    INSERT INTO dlq_queuetally (vhost, queue, stored, parked, last_received_at)
    SELECT vhost, queue, count(*), count(*) FILTER (WHERE status = '{PARKED}'),
           max(received_at)
    FROM dlq_message GROUP BY vhost, queue
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
        ("dlq", "0020_default_rule_every_vhost"),
    ]

    operations = [
        migrations.CreateModel(
            name="QueueTally",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("vhost", models.CharField(max_length=255)),
                ("queue", models.CharField(max_length=255)),
                ("stored", models.BigIntegerField()),
                ("parked", models.BigIntegerField()),
                ("last_received_at", models.DateTimeField(null=True)),
            ],
            options={
                "indexes": [models.Index(fields=["vhost", "queue"], name="queuetally_queue")],
            },
        ),
        migrations.RunPython(install, uninstall),
    ]
