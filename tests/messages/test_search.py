"""The search index behind the drainer: a search is exact before the indexer ran, after it,
and after an edit; the watermark never passes an id still being committed; retention takes
the entries with their messages."""

import threading
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from dlq.actions import message as message_actions
from dlq.messages import queries, retention
from dlq.messages import search as search_index
from dlq.models import SearchEntry
from tests.factories import client_for, make_message, make_messages, make_user
from tests.keyset import walk

pytestmark = pytest.mark.django_db(transaction=True)


def search(q: str) -> list[int]:
    client = client_for(make_user("viewer"), token=True)
    response = client.get("/api/v1/messages", {"q": q})
    assert response.status_code == 200
    return [m["id"] for m in response.json()["results"]]


def entries(messages) -> dict[int, str]:
    found = SearchEntry.objects.filter(message_id__in=[m.pk for m in messages])
    return dict(found.values_list("message_id", "text"))


def test_a_message_drained_just_now_is_found_before_the_indexer_ran():
    search_index.catch_up()
    old = make_message(body=b"invoice 4711 declined")
    search_index.catch_up()
    new = make_message(body=b"INVOICE 4711 declined again")
    assert entries([new]) == {}
    assert search_index.indexed_upto() < new.pk
    assert search("invoice 4711") == [new.pk, old.pk]


def test_it_is_found_through_its_entry_after_the_indexer_ran():
    hits = make_messages(3, body=b"customer ACME-Widgets")
    make_messages(2, body=b"customer Globex")
    assert search_index.catch_up() == 5
    assert search_index.indexed_upto() >= hits[-1].pk
    assert "customer acme-widgets" in entries(hits)[hits[0].pk]  # folded (ingest.fold)
    assert search("acme-widgets") == [m.pk for m in reversed(hits)]
    assert search_index.run_pass() == 0  # nothing new: nothing copied twice


@pytest.mark.parametrize("indexed", [False, True])
def test_an_edit_changes_what_the_message_is_found_by(indexed):
    message = make_message(body=b"shipment to old-street 5")
    if indexed:
        search_index.catch_up()
    message_actions.edit(message.pk, "ops", "address fixed", body_text="shipment to new-avenue 9")
    assert search("old-street") == []
    assert search("new-avenue") == [message.pk]
    search_index.catch_up()
    assert "new-avenue" in entries([message])[message.pk]
    assert search("old-street") == []
    assert search("new-avenue") == [message.pk]


def test_the_watermark_waits_for_an_id_that_commits_after_higher_ones():
    search_index.catch_up()
    stored, release = threading.Event(), threading.Event()
    held = []

    def slow_batch():
        try:
            with transaction.atomic():
                held.append(make_message(queue="slow.dlq", body=b"late-needle"))
                stored.set()
                release.wait(30)
        finally:
            connection.close()

    writer = threading.Thread(target=slow_batch)
    writer.start()
    try:
        assert stored.wait(30)
        # A higher id, committed first (another queue: one queue's batches serialise).
        later = make_message(queue="fast.dlq", body=b"early-needle")
        assert later.pk > held[0].pk
        for _ in range(3):
            search_index.run_pass()
        assert search_index.indexed_upto() < held[0].pk
    finally:
        release.set()
        writer.join()
    assert search("late-needle") == [held[0].pk]  # committed: the tail finds it at once
    search_index.catch_up()
    assert set(entries([held[0], later])) == {held[0].pk, later.pk}
    assert search("late-needle") == [held[0].pk]
    assert search("-needle") == [later.pk, held[0].pk]


def test_retention_purges_the_entries_with_their_messages_without_reading_them():
    gone = make_messages(3, body=b"noise to purge")
    kept = make_message(body=b"noise to keep")
    for message in gone:
        message_actions.discard(message.pk, "ops", "noise")
    search_index.catch_up()
    assert len(entries([*gone, kept])) == 4
    with CaptureQueriesContext(connection) as queries:
        assert retention.purge_messages(now=timezone.now() + timedelta(days=400)) == 3
    assert set(entries([*gone, kept])) == {kept.pk}
    touched = [q["sql"] for q in queries if "searchentry" in q["sql"]]
    assert touched and all(sql.startswith("DELETE") for sql in touched)  # by id, unread
    assert search("noise to") == [kept.pk]


@pytest.mark.parametrize("indexed", ["none", "half", "all"])
def test_search_pages_are_the_same_wherever_the_indexer_stands(monkeypatch, indexed):
    monkeypatch.setattr(queries, "PAGE_WINDOW", 3)  # a few rows behave like a million
    make_message(body=b"before")
    search_index.catch_up()
    messages = []
    for i in range(24):
        needle = i % 5 == 0 or i in (21, 22)
        messages += make_messages(1, queue=f"q{i % 2}.dlq", body=b"Needle" if needle else b"hay")
    if indexed == "half":
        search_index.run_pass()  # looks
        search_index.run_pass(limit=12)  # copies 12 ids
        assert messages[10].pk < search_index.indexed_upto() < messages[13].pk
    elif indexed == "all":
        search_index.catch_up()
    hits = [m.pk for m in reversed(messages) if bytes(m.body) == b"Needle"]
    for filters, expected in (
        ({"q": "needle"}, hits),
        ({"q": "NEEDLE", "queue": "q0.dlq"}, [pk for pk in hits if pk in even(messages)]),
        ({"q": "absent"}, []),
    ):
        for limit in (1, 2, 50):
            assert walk(filters, limit) == expected, (filters, limit)


def even(messages) -> set[int]:
    return {m.pk for m in messages if m.queue == "q0.dlq"}


def test_celery_beat_runs_the_indexer_every_few_seconds():
    from django.conf import settings

    from console.celery import app
    from dlq.tasks import search as search_tasks

    entry = settings.CELERY_BEAT_SCHEDULE["index-search"]
    assert entry["task"] == search_tasks.index_search.name
    assert entry["schedule"] <= 10
    app.loader.import_default_modules()
    assert entry["task"] in app.tasks
    message = make_message(body=b"beat-needle")
    search_tasks.index_search()  # looks
    search_tasks.index_search()  # copies
    assert message.pk in entries([message])


def test_a_pass_skips_the_ids_no_message_has():
    # Ids far above the watermark (a purged past, or a sequence that started high): one
    # pass of `limit` ids still reaches the messages.
    search_index.catch_up()
    first = make_message(body=b"gap-needle")
    with connection.cursor() as cursor:
        cursor.execute("SELECT setval(pg_get_serial_sequence('dlq_message', 'id'), %s)",
                       [first.pk + 50_000])  # fmt: skip
    far = make_message(body=b"gap-needle far")
    search_index.run_pass(limit=100)  # looks
    search_index.run_pass(limit=100)  # copies the first
    search_index.run_pass(limit=100)  # copies the far one, past the gap
    assert set(entries([first, far])) == {first.pk, far.pk}


@pytest.mark.parametrize("indexed", [False, True])
def test_any_case_finds_any_case_beyond_ascii(indexed):
    hit = make_message(body="Ärger im Büro: ΟΔΟΣ ΣΥΣΤΗΜΑ down; İstanbul".encode())
    make_message(body=b"arger im buro")
    if indexed:
        search_index.catch_up()
    terms = ("ärger", "ÄRGER", "bÜRO", "ΣΥΣΤΗΜΑ", "συστημα", "οδος", "ΟΔΟΣ", "οδοσ", "İSTANBUL")
    for term in terms:  # a final sigma is a sigma; a dotted capital I keeps its dot
        assert search(term) == [hit.pk], term


def test_a_term_found_before_the_indexer_ran_is_found_after():
    bodies = ["ΟΔΟΣ", "οδος", "Straße", "STRASSE", "İstanbul", "ǅemal", "ﬁle"]
    messages = {body: make_message(body=body.encode()) for body in bodies}
    terms = ["ΟΔΟΣ", "οδος", "Straße", "strasse", "İstanbul", "istanbul", "ǆ", "ﬁ", "fi"]
    before = {term: search(term) for term in terms}
    search_index.catch_up()
    assert set(entries(messages.values())) == {m.pk for m in messages.values()}
    assert {term: search(term) for term in terms} == before
    assert before["οδος"] == before["ΟΔΟΣ"] == [messages["οδος"].pk, messages["ΟΔΟΣ"].pk]
    assert before["strasse"] == [messages["STRASSE"].pk, messages["Straße"].pk]


def test_the_upgrade_folds_what_is_not_indexed_and_old_entries_are_still_found():
    from django.db.migrations.executor import MigrationExecutor

    indexed = make_message(body=b"x")
    search_index.catch_up()
    unindexed, edited = make_message(body=b"y"), make_message(body=b"z")
    with connection.cursor() as cursor:  # as 0.8.0 stored them: not folded
        cursor.execute("UPDATE dlq_searchentry SET text = 'Invoice ACME old'"
                       " WHERE message_id = %s", [indexed.pk])  # fmt: skip
        cursor.execute("UPDATE dlq_message SET search_text = 'Invoice ACME new' WHERE id = %s",
                       [unindexed.pk])  # fmt: skip
        # Edited during a backlog: an entry above the watermark, which the indexer keeps.
        cursor.execute("UPDATE dlq_message SET search_text = 'Straße' WHERE id = %s",
                       [edited.pk])  # fmt: skip
        cursor.execute("INSERT INTO dlq_searchentry (message_id, text) VALUES (%s, 'Straße')",
                       [edited.pk])  # fmt: skip
    assert search("acme") == [indexed.pk]  # the unindexed one is missed before the upgrade
    executor = MigrationExecutor(connection)
    executor.migrate([("dlq", "0025_lighter_replay_writes")])
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes("dlq"))  # 0026 and what came after
    unindexed.refresh_from_db()
    assert unindexed.search_text == "invoice acme new"
    assert search("acme") == [unindexed.pk, indexed.pk]
    assert search("INVOICE Acme") == [unindexed.pk, indexed.pk]
    assert search("STRASSE") == [edited.pk]
    search_index.catch_up()  # found before the indexer passes it, and after
    assert search("STRASSE") == [edited.pk]
    assert search("acme") == [unindexed.pk, indexed.pk]


def test_a_backlog_is_copied_by_several_connections_and_found(monkeypatch):
    monkeypatch.setattr(search_index, "BATCH", 3)  # 20 messages: 7 ranges
    copied_on = set()
    copy_range = search_index._copy_range

    def spy(bounds):
        copied_on.add(threading.current_thread().name)
        return copy_range(bounds)

    monkeypatch.setattr(search_index, "_copy_range", spy)
    search_index.catch_up()
    messages = make_messages(20, body=b"backlog-needle")
    assert search_index.catch_up() == 20
    assert set(entries(messages)) == {m.pk for m in messages}
    assert len(copied_on) == search_index.COPIERS
    assert all(name.startswith("search-copier") for name in copied_on)
    assert search_index.indexed_upto() >= messages[-1].pk
    assert search("backlog-needle") == [m.pk for m in reversed(messages)]


def test_beat_s_task_works_through_a_backlog_without_waiting_for_its_next_tick(monkeypatch):
    from dlq.tasks import search as search_tasks

    search_index.catch_up()
    monkeypatch.setattr(search_index, "PASS_LIMIT", 4)  # ids a pass copies at most
    messages = make_messages(10, body=b"tick-needle")
    passes = spy_on_passes(monkeypatch)
    # One task: a pass that looks (no drainer's transaction is open), then three that copy.
    assert search_tasks.index_search() == 10
    assert passes[:4] == [0, 4, 4, 2]
    assert search_index.indexed_upto() >= messages[-1].pk
    assert search_tasks.index_search() == 0  # nothing new: it ends at once


def test_beat_s_task_ends_when_a_transaction_that_took_ids_is_still_open():
    from dlq.tasks import search as search_tasks

    search_index.catch_up()
    make_message(body=b"committed")
    holding = threading.Event()
    release = threading.Event()

    def drainer_mid_batch():
        try:
            with transaction.atomic():
                make_message(body=b"not committed yet")
                holding.set()
                release.wait(10)
        finally:
            connection.close()

    drainer = threading.Thread(target=drainer_mid_batch)
    drainer.start()
    try:
        assert holding.wait(10)
        assert search_tasks.index_search() == 0  # looks, sees the open transaction, ends
    finally:
        release.set()
        drainer.join()
    assert search_tasks.index_search() == 2  # both, once it has committed


def spy_on_passes(monkeypatch) -> list:
    """What each indexer pass returns, in order, from now on."""
    passes, run = [], search_index._pass

    def spy(limit):
        passes.append(run(limit))
        return passes[-1]

    monkeypatch.setattr(search_index, "_pass", spy)
    return passes


def test_beat_s_task_leaves_a_backlog_to_the_task_already_working_on_it(monkeypatch):
    from dlq.models import SearchWatermark
    from dlq.tasks import search as search_tasks

    search_index.catch_up()
    make_messages(5, body=b"busy-needle")
    search_index.run_pass()  # looks: the five can be copied now
    holding, release = threading.Event(), threading.Event()

    def other_task_mid_pass():
        try:
            with transaction.atomic():
                SearchWatermark.objects.select_for_update().get(pk=search_index.WATERMARK)
                holding.set()
                release.wait(10)
        finally:
            connection.close()

    other = threading.Thread(target=other_task_mid_pass)
    other.start()
    passes = spy_on_passes(monkeypatch)
    try:
        assert holding.wait(10)
        assert search_tasks.index_search() == 0
        assert passes == [None]  # one look at the lock, no spinning until its budget ends
    finally:
        release.set()
        other.join()
    assert search_tasks.index_search() == 5
