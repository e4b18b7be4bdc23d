# The text search's own table, filled behind the drainer by dlq/messages/search.py, with the
# trigram index (PostgreSQL only) that used to sit on dlq_message and slow every insert.

import django.db.models.deletion
from django.db import migrations, models

# icontains compares UPPER(text) LIKE UPPER(pattern) on PostgreSQL: the index is on that
# expression.
TRIGRAM_INDEX = (
    "CREATE INDEX IF NOT EXISTS search_entry_trgm ON dlq_searchentry"
    " USING gin (UPPER(text) gin_trgm_ops)"
)


def add_trigram_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        schema_editor.execute(TRIGRAM_INDEX)
        # Development databases that ran 0012 before its trigram index moved here.
        schema_editor.execute("DROP INDEX IF EXISTS msg_search_trgm")
    # The indexer's one row; it starts from the first message.
    apps.get_model("dlq", "SearchWatermark").objects.create(upto=0)


def drop_trigram_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS search_entry_trgm")


class Migration(migrations.Migration):

    dependencies = [
        ('dlq', '0013_health'),
    ]

    operations = [
        migrations.CreateModel(
            name='SearchEntry',
            fields=[
                ('message', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, primary_key=True, related_name='search_entry', serialize=False, to='dlq.message')),
                ('text', models.TextField()),
            ],
        ),
        migrations.CreateModel(
            name='SearchWatermark',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('upto', models.BigIntegerField(default=0)),
                ('seen_upto', models.BigIntegerField(blank=True, null=True)),
                ('holders', models.JSONField(default=list)),
            ],
        ),
        migrations.RunPython(add_trigram_index, drop_trigram_index),
    ]
