# Search texts are stored folded from 0.9.0 (dlq.messages.ingest.fold), and a search reads
# the messages the indexer has not reached yet with a plain LIKE on them. The messages
# already above the indexer's watermark are folded here; the ones below it are searched
# through their entries, which keep comparing in UPPER(...) (dlq.messages.queries).
# Drainers are stopped during an upgrade (docs/upgrades.md), so no unfolded text arrives
# after this runs. Usually a few seconds of arrivals: beat indexes every few seconds.

from django.db import migrations

BATCH = 2_000


def fold_the_unindexed(apps, schema_editor):
    message = apps.get_model("dlq", "Message")
    mark = apps.get_model("dlq", "SearchWatermark").objects.filter(pk=1).first()
    unindexed = message.objects.filter(id__gt=mark.upto if mark else 0)
    batch = []
    for row in unindexed.only("id", "search_text").order_by("id").iterator(chunk_size=BATCH):
        folded = row.search_text.lower()  # ingest.fold, as it is today
        if folded != row.search_text:
            row.search_text = folded
            batch.append(row)
        if len(batch) == BATCH:
            message.objects.bulk_update(batch, ["search_text"])
            batch = []
    message.objects.bulk_update(batch, ["search_text"])


class Migration(migrations.Migration):

    dependencies = [
        ("dlq", "0025_lighter_replay_writes"),
    ]

    operations = [
        migrations.RunPython(fold_the_unindexed, migrations.RunPython.noop),
    ]
