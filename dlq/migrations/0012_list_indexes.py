# The message list at a million rows: an index the queue overview counts from without
# reading the table, and msg_received with the id, so that a time range's ids come from the
# index alone. (The text search's trigram index is on dlq_searchentry: migration 0014.)

from django.db import migrations, models


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
    ]
