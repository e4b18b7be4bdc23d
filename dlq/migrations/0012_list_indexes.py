# The message list at a million rows: a trigram index for the text search (PostgreSQL only),
# an index the queue overview counts from without reading the table, and msg_received with
# the id, so that a time range's ids come from the index alone.

from django.db import migrations, models

# icontains compares UPPER(search_text) LIKE UPPER(pattern) on PostgreSQL: the index is on
# that expression. IF NOT EXISTS: a database where it was built by hand migrates as is.
TRIGRAM_INDEX = (
    "CREATE INDEX IF NOT EXISTS msg_search_trgm ON dlq_message"
    " USING gin (UPPER(search_text) gin_trgm_ops)"
)


def add_trigram_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        schema_editor.execute(TRIGRAM_INDEX)
        # Statistics of the indexed expression: the planner's guess at how common a term is.
        schema_editor.execute("ANALYZE dlq_message")


def drop_trigram_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS msg_search_trgm")


class Migration(migrations.Migration):
    dependencies = [
        ("dlq", "0011_partial_lineage_index"),
    ]

    operations = [
        migrations.RemoveIndex(model_name="message", name="msg_received"),
        migrations.AddIndex(
            model_name="message",
            index=models.Index(fields=["received_at", "id"], name="msg_received"),
        ),
        migrations.AddIndex(
            model_name="message",
            index=models.Index(
                fields=["vhost", "queue", "status", "received_at"], name="msg_overview"
            ),
        ),
        migrations.RunPython(add_trigram_index, drop_trigram_index),
    ]
