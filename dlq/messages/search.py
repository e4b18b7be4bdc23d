"""The text search index, filled behind the drainer.

The drainer stores search_text on dlq_message with no index on it; a trigram index there
cost its inserts most of their speed. The indexer (a Celery beat task, every few seconds)
copies (id, search_text) of new messages into dlq_searchentry, whose trigram index makes
the search fast, in set-based INSERT ... SELECTs. A search stays exact whatever the lag:
it reads the entries, and scans messages above the watermark (queries.text_search).

The watermark, `upto`, promises that every message at or below it has its entry. Ids are
taken from the sequence when a row is inserted, but transactions commit in any order: when
the indexer sees id 900 committed, a drainer may still be about to commit 880. So a pass
only looks: it notes the highest committed id (`seen_upto`) and, after that, the open
transactions that have taken ids (they hold RowExclusiveLock on the id sequence until they
end; `holders`). Any id at or below `seen_upto` was taken before it was read, so by a
transaction that had ended by then or is among the holders. A later pass that finds every
holder gone copies up to `seen_upto` and moves the watermark there. On SQLite one writer
at a time commits ids in order: there are never holders.

A backlog (a burst of arrivals) is copied by COPIERS connections at once, each committing
its own id ranges; the watermark moves once they all have. Entries above the watermark are
harmless (a search reads the messages there, and an edit writes entries anywhere), and a
pass that fails leaves its committed ranges to the next, whose copy skips what exists.
"""

import time
from concurrent.futures import ThreadPoolExecutor

from django.db import connection, transaction

from dlq.models import Message
from dlq.models.search import SearchEntry, SearchWatermark

BATCH = 10_000  # ids per INSERT ... SELECT
PASS_LIMIT = 100_000  # ids one pass copies at most: a backlog goes on at the next pass
# A trigram entry is CPU-bound work in the database server (about 100 us, mostly pg_trgm's
# extraction), and concurrent inserts into the GIN index hardly wait on each other: two
# copiers index a backlog at 1.8 times one's rate on two cores. More would take the cores
# the drainers need during a burst.
COPIERS = 2
WATERMARK = 1  # the one row's primary key

COPY_SQL = (
    f"INSERT INTO {SearchEntry._meta.db_table} (message_id, text)"
    f" SELECT id, search_text FROM {Message._meta.db_table} WHERE id > %s AND id <= %s"
    " ON CONFLICT (message_id) DO NOTHING"
)
HOLDERS_SQL = """
SELECT pid, virtualtransaction FROM pg_locks
WHERE locktype = 'relation' AND mode = 'RowExclusiveLock' AND granted
  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND relation = pg_get_serial_sequence(%s, 'id')::regclass AND pid <> pg_backend_pid()
"""


def indexed_upto() -> int:
    """Every message at or below this id has its entry."""
    mark = SearchWatermark.objects.filter(pk=WATERMARK).values_list("upto", flat=True)
    return mark.first() or 0


def run_pass(limit: int | None = None) -> int:
    """One indexer pass: the entries it wrote (0 when a pass already runs elsewhere)."""
    return _pass(PASS_LIMIT if limit is None else limit) or 0


def index(budget: float = 30.0) -> int:
    """Passes, one after another, for up to `budget` seconds (beat's task), while they find
    entries to write or leave some that can be written now: a backlog is worked through
    without waiting for beat's ticks. It ends at a pass that finds nothing new, or only
    looks while a drainer's transaction is open, or finds another task's pass running (that
    one goes on). On SQLite, one pass: the drainers need the one write lock between them."""
    deadline, total = time.monotonic() + budget, 0
    while True:
        written = _pass(PASS_LIMIT)
        if written is None:
            return total
        total += written
        if connection.vendor != "postgresql" or time.monotonic() >= deadline:
            return total
        if not written and not _copyable():
            return total


def _pass(limit: int) -> int | None:
    """One pass: the entries it wrote, or None when another pass holds the watermark."""
    SearchWatermark.objects.get_or_create(pk=WATERMARK)
    with transaction.atomic():
        mark = (
            SearchWatermark.objects.select_for_update(skip_locked=True).filter(pk=WATERMARK).first()
        )
        if mark is None:
            return None
        target = _settled(mark)
        start = _first_gap_end(mark.upto, target)
        written, copied_to = _copy(start, min(target, start + limit))
        mark.upto = copied_to
        if copied_to == target:  # caught up: look again
            mark.seen_upto, mark.holders = _look()
        mark.save()
    return written


def catch_up() -> int:
    """Passes until every message committed before the call has its entry (bench, tests)."""
    total = run_pass()
    newest = Message.objects.order_by("-id").values_list("id", flat=True).first() or 0
    while indexed_upto() < newest:
        total += run_pass()
    return total


def _copyable() -> bool:
    """Whether messages above the watermark can be copied now (a pass only looked, and every
    transaction it saw has ended)."""
    mark = SearchWatermark.objects.filter(pk=WATERMARK).first()
    return mark is not None and _settled(mark) > mark.upto


def _settled(mark: SearchWatermark) -> int:
    """The id up to which no message can still be committed."""
    if mark.seen_upto is None:
        return mark.upto
    still_open = {tuple(h) for h in mark.holders} & {tuple(h) for h in _holders()}
    return mark.upto if still_open else max(mark.upto, mark.seen_upto)


def _first_gap_end(after: int, target: int) -> int:
    """Where copying starts: past the ids above `after` that no message has (a fresh
    console with a high id sequence, or ids retention purged), so a pass's `limit` of ids
    is spent on messages. Ids up to `target` can no longer commit (_settled)."""
    first = Message.objects.filter(id__gt=after).order_by("id").values_list("id", flat=True)
    found = first.first()
    if found is None:
        return max(after, target)
    return max(after, min(found - 1, target))


def _copy(after: int, upto: int) -> tuple[int, int]:
    """Entries for the messages in (after, upto], BATCH ids a statement; a backlog of more
    than one statement on PostgreSQL by COPIERS connections at once."""
    ranges = [(low, min(low + BATCH, upto)) for low in range(after, upto, BATCH)]
    if connection.vendor != "postgresql" or len(ranges) < 2:
        written = sum(map(_copy_range, ranges))
    else:
        with ThreadPoolExecutor(COPIERS, thread_name_prefix="search-copier") as pool:
            written = sum(pool.map(_copy_range_apart, ranges))
    return written, max(after, upto)


def _copy_range(bounds: tuple[int, int]) -> int:
    with connection.cursor() as cursor:
        cursor.execute(COPY_SQL, list(bounds))
        return max(cursor.rowcount, 0)


def _copy_range_apart(bounds: tuple[int, int]) -> int:
    """_copy_range on the calling thread's own connection, committed at once."""
    try:
        return _copy_range(bounds)
    finally:
        connection.close()


def _look() -> tuple[int | None, list]:
    """The highest committed id, then the transactions that may still commit lower ones."""
    newest = Message.objects.order_by("-id").values_list("id", flat=True).first()
    return newest, _holders()


def _holders() -> list[list]:
    if connection.vendor != "postgresql":
        return []
    with connection.cursor() as cursor:
        cursor.execute(HOLDERS_SQL, [Message._meta.db_table])
        return [list(row) for row in cursor.fetchall()]


def reindex(message: Message) -> None:
    """An edited message's entry, in the edit's transaction. An upsert: if the indexer is
    copying the old text right now, this waits for it and overwrites it."""
    SearchEntry.objects.bulk_create(
        [SearchEntry(message_id=message.pk, text=message.search_text)],
        update_conflicts=True,
        unique_fields=["message"],
        update_fields=["text"],
    )
