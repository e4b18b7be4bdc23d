# Search texts are stored folded from 0.9.0 (dlq.messages.ingest.fold: str.casefold), and a
# search reads the messages the indexer has not reached yet with a plain LIKE on them. The
# messages already above the indexer's watermark are folded here; the ones below it are
# searched through their entries, which keep comparing in UPPER(...) (dlq.messages.queries).
# Drainers are stopped during an upgrade (docs/upgrades.md), so no unfolded text arrives
# after this runs. Usually a few seconds of arrivals (beat indexes every 5 seconds); all of
# the messages when the indexer never ran. An entry there (an edit's, or a copy a failed
# pass left) is folded with its message: the indexer keeps an entry it finds, and an
# unfolded one would miss, once indexed, what the folded text was found by before.

from django.db import migrations

BATCH = 5_000
UPDATE_SQL = (
    "UPDATE dlq_message AS m SET search_text = f.text"
    " FROM unnest(%s::bigint[], %s::text[]) AS f(id, text) WHERE m.id = f.id"
)
ENTRIES_SQL = (
    "UPDATE dlq_searchentry AS e SET text = f.text"
    " FROM unnest(%s::bigint[], %s::text[]) AS f(id, text) WHERE e.message_id = f.id"
)


def fold_the_unindexed(apps, schema_editor):
    message = apps.get_model("dlq", "Message")
    mark = apps.get_model("dlq", "SearchWatermark").objects.filter(pk=1).first()
    after = mark.upto if mark else 0
    unindexed = message.objects.order_by("id").values_list("id", "search_text")
    while True:  # by id ranges: no cursor held open over rows being updated
        rows = list(unindexed.filter(id__gt=after)[:BATCH])
        if not rows:
            return
        changed = [(pk, text.casefold()) for pk, text in rows if text.casefold() != text]
        if changed:
            _store(apps, schema_editor.connection, changed)
        after = rows[-1][0]


def _store(apps, connection, changed: list[tuple[int, str]]) -> None:
    if connection.vendor == "postgresql":
        ids, texts = [pk for pk, _ in changed], [t for _, t in changed]
        with connection.cursor() as cursor:
            cursor.execute(UPDATE_SQL, [ids, texts])
            cursor.execute(ENTRIES_SQL, [ids, texts])
        return
    message, entry = apps.get_model("dlq", "Message"), apps.get_model("dlq", "SearchEntry")
    message.objects.bulk_update(
        [message(id=pk, search_text=text) for pk, text in changed], ["search_text"]
    )
    folded = dict(changed)
    entries = entry.objects.filter(message_id__in=folded)
    entry.objects.bulk_update(
        [
            entry(message_id=pk, text=folded[pk])
            for pk in entries.values_list("message_id", flat=True)
        ],
        ["text"],
    )


class Migration(migrations.Migration):
    dependencies = [
        ("dlq", "0025_lighter_replay_writes"),
    ]

    operations = [
        migrations.RunPython(fold_the_unindexed, migrations.RunPython.noop),
    ]
