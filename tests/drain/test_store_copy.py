"""The drainer's binary COPY stores exactly what a plain INSERT of the same rows stores.

Transactional tests: outside a transaction, store_batch takes its few-round-trip path on
PostgreSQL (the drainer's); inside one (transaction.atomic), its careful Django path."""

import json
from dataclasses import replace

import pytest
from django.db import connection, transaction

from dlq.drain import store
from dlq.messages.ingest import build_row
from dlq.models import DrainedQueue, Message, PendingBatch
from tests.ingestcases import RECEIVED_AT, deliveries

pytestmark = pytest.mark.django_db(transaction=True)


def _rows() -> list[dict]:
    rows = [build_row(d, RECEIVED_AT) for d in deliveries()]
    for row in rows:
        row["_redelivered"] = False
    return rows


def _stored(batch_id: str) -> list[dict]:
    columns = [c for c in store.COLUMNS if c != "drain_batch"]
    return list(Message.objects.filter(drain_batch=batch_id).order_by("id").values(*columns))


def test_binary_copy_stores_what_insert_stores():
    assert store._binary_types() is not None  # PostgreSQL: the COPY is binary
    copied = _rows()
    assert store.store_batch("c" * 32, "test drainer", copied) == len(copied)
    inserted = _rows()
    for row, stored in zip(inserted, copied, strict=True):
        row["drain_batch"] = "i" * 32
        row.update(previous_id=stored["previous_id"], lineage_id=stored["lineage_id"])
    with connection.cursor() as cursor:
        cursor.executemany(store._insert_sql(), [store._adapt(row) for row in inserted])
    by_copy, by_insert = _stored("c" * 32), _stored("i" * 32)
    assert len(by_copy) == len(copied)
    for i, (got, want) in enumerate(zip(by_copy, by_insert, strict=True)):
        assert got == want, f"delivery {i}"
    assert bytes(by_copy[4]["body"]) == copied[4]["body"]
    if store._lz4:  # the server has lz4: the drainer's large values are compressed with it
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT DISTINCT pg_column_compression(search_text) FROM dlq_message"
                " WHERE drain_batch = %s AND pg_column_compression(search_text) IS NOT NULL",
                ["c" * 32],
            )
            assert cursor.fetchall() == [("lz4",)]


@pytest.mark.parametrize("in_transaction", [False, True])
def test_a_row_the_database_refuses_is_stored_without_derived_fields(in_transaction):
    rows = _rows()[:5]
    rows[2]["message_id"] = "m" * 300  # longer than the column: the binary COPY fails
    if in_transaction:
        with transaction.atomic():
            assert store.store_batch("r" * 32, "test drainer", rows) == 5
    else:
        assert store.store_batch("r" * 32, "test drainer", rows) == 5
    assert Message.objects.count() == 5
    stored = _stored("r" * 32)
    assert [bytes(m["body"]) for m in stored] == [row["body"] for row in rows]
    assert "stored without derived fields" in stored[2]["drain_note"]
    assert [m["drain_note"] for m in stored if m is not stored[2]] == [""] * 4
    assert PendingBatch.objects.filter(id="r" * 32).exists()


def test_a_redelivery_of_a_message_a_0_1_0_drainer_stored_is_recognised():
    """0.1.0 stored json.dumps text and fingerprinted it; its pending batch must still match
    the redeliveries a newer drainer takes after an upgrade, while a twin is still stored."""
    from dlq.drain.batch import rows_of
    from dlq.messages.ingest import legacy_dumps, legacy_fingerprint

    changed = [d for d in deliveries() if legacy_fingerprint(d) != build_row(d)["fingerprint"]]
    corpus = changed[:6]
    assert len(corpus) == 6  # messages whose fingerprint the format changed
    old = [build_row(d, RECEIVED_AT) for d in corpus]
    for row, delivery in zip(old, corpus, strict=True):
        for field in ("properties_json", "headers_json", "original_routing_keys_json"):
            row[field] = legacy_dumps(json.loads(row[field]))
        row["fingerprint"] = legacy_fingerprint(delivery)
        row["_redelivered"] = False
    assert store.store_batch("o" * 32, "a 0.1.0 drainer", old) == 6

    redelivered = [replace(d, redelivered=True) for d in corpus[:4]]
    twin = replace(corpus[4], redelivered=False)  # the same content, but a new message
    new = store.store_batch("n" * 32, "this drainer", rows_of([*redelivered, twin]))
    assert new == 1
    assert Message.objects.count() == 7
    assert Message.objects.filter(drain_batch="n" * 32).count() == 5  # taken over, and the twin


def test_both_ways_of_storing_a_batch_store_the_same_and_are_idempotent():
    fast, careful = _rows(), _rows()
    assert store.store_batch("f" * 32, "test drainer", fast, forget=["x" * 32]) == len(fast)
    with transaction.atomic():
        assert store.store_batch("s" * 32, "test drainer", careful) == len(careful)
    assert _stored("f" * 32) == _stored("s" * 32)
    # A retry after a lost answer to COMMIT stores nothing, either way.
    assert store.store_batch("f" * 32, "test drainer", _rows()) == 0
    with transaction.atomic():
        assert store.store_batch("s" * 32, "test drainer", _rows()) == 0
    assert Message.objects.count() == 2 * len(fast)
    assert set(PendingBatch.objects.values_list("id", flat=True)) == {"f" * 32, "s" * 32}
    queues = {(q.vhost, q.name) for q in DrainedQueue.objects.exclude(last_arrival_at=None)}
    assert queues == {(row["vhost"], row["queue"]) for row in fast}
    # Forgetting rides on the next batch.
    assert store.store_batch("g" * 32, "test drainer", _rows()[:1], forget=["f" * 32]) == 1
    assert not PendingBatch.objects.filter(id="f" * 32).exists()
