"""Keyset pages of a search or a time range whose matches lie below the newest ids a page
scans first (PAGE_WINDOW): they are collected by index and must come out exactly in the plain
newest-first order."""

from datetime import UTC, datetime, timedelta

import pytest

from dlq.messages import queries
from dlq.models import Message, Status
from tests.factories import client_for, make_message, make_messages, make_user
from tests.keyset import walk

pytestmark = pytest.mark.django_db


@pytest.fixture
def small_window(monkeypatch):
    """A window of 3 ids, so a few rows behave like a million sparse ones."""
    monkeypatch.setattr(queries, "PAGE_WINDOW", 3)


def newest_first(filters: dict) -> list[int]:
    return list(queries.filter_messages(filters).values_list("id", flat=True))


def test_sparse_matches_far_below_the_window_are_all_found_in_order(small_window):
    old = make_messages(4, queue="billing.dlq", body=b"needle in the hay")
    make_messages(9, queue="orders.dlq", body=b"only hay")
    make_message(queue="billing.dlq", body=b"NEEDLE again")
    make_messages(9, queue="orders.dlq", body=b"only hay")
    for filters in (
        {"queue": "billing.dlq"},
        {"q": "needle"},
        {"q": "needle", "queue": "billing.dlq"},
    ):
        for limit in (1, 2, 3, 50):
            assert walk(filters, limit) == newest_first(filters)
    assert len(walk({"q": "needle"}, 2)) == len(old) + 1


def test_every_filter_pages_like_the_plain_order(small_window):
    make_messages(5, queue="a.dlq", reason="expired", body=b"alpha")
    make_messages(7, queue="b.dlq", body=b"beta")
    make_messages(3, queue="a.dlq", body=b"alpha beta")
    Message.objects.filter(id__in=newest_first({"queue": "b.dlq"})[::3]).update(
        status=Status.DISCARDED
    )
    cases = [{}, {"queue": "a.dlq"}, {"status": "discarded"}, {"reason": "expired"},
             {"q": "beta"}, {"q": "ALPHA", "status": "parked"}, {"q": "absent"}]  # fmt: skip
    for filters in cases:
        assert walk(filters, 2) == newest_first(filters), filters


def test_an_old_time_range_below_the_window_pages_in_order(small_window):
    day = datetime(2026, 5, 1, tzinfo=UTC)
    make_messages(4, received_at=day - timedelta(days=1))
    inside = make_messages(5, received_at=day + timedelta(hours=1))
    make_messages(9, received_at=day + timedelta(days=3))
    window = {"received_after": day, "received_before": day + timedelta(days=1)}
    for filters in (window, {**window, "q": "order"}, {"received_before": day}):
        for limit in (1, 2, 50):
            assert walk(filters, limit) == newest_first(filters), filters
    assert walk(window, 2) == [m.id for m in reversed(inside)]


def test_an_empty_table_gives_an_empty_last_page():
    assert queries.page(queries.filter_messages({}), None, 50) == ([], None)
    assert queries.page(queries.filter_messages({"q": "x"}), None, 50) == ([], None)


def test_the_api_pages_through_collected_matches(small_window):
    hits = make_messages(3, body=b"invoice 4711")
    make_messages(8, body=b"invoice 99")
    client = client_for(make_user("viewer"), token=True)
    body = client.get("/api/v1/messages", {"q": "4711", "limit": 2}).json()
    assert [m["id"] for m in body["results"]] == [hits[2].id, hits[1].id]
    body = client.get("/api/v1/messages", {"q": "4711", "cursor": body["next_cursor"]}).json()
    assert [m["id"] for m in body["results"]] == [hits[0].id]
    assert body["next_cursor"] is None


@pytest.mark.parametrize("window", [3, 10_000])
def test_search_is_literal_and_ignores_case_on_both_paths(monkeypatch, window):
    monkeypatch.setattr(queries, "PAGE_WINDOW", window)
    percent = make_message(body=b"discount 100% off_now")
    make_message(body=b"discount 1000 offXnow")
    mixed = make_message(body=b"Customer ACME-Widgets GmbH")
    make_messages(6, body=b"filler")
    assert walk({"q": "100%"}, 50) == [percent.id]
    assert walk({"q": "off_now"}, 50) == [percent.id]
    assert walk({"q": "acme-widgets"}, 50) == [mixed.id]
    assert walk({"q": "me-wid"}, 50) == [mixed.id]
    assert walk({"q": "ts gm"}, 50) == [mixed.id]


@pytest.mark.parametrize("filters", [{}, {"q": "order"}])
def test_a_cursor_it_did_not_give_out_is_refused(filters):
    make_message()
    with pytest.raises(ValueError, match="not a cursor"):
        queries.page(queries.filter_messages(filters), "bogus!", 50)


@pytest.mark.parametrize(
    ("filters", "two_steps"),
    [
        ({"q": "x"}, True),
        ({"received_after": datetime(2026, 5, 1, tzinfo=UTC)}, True),
        ({"queue": "a.dlq", "received_before": datetime(2026, 5, 1, tzinfo=UTC)}, True),
        ({}, False),
        ({"queue": "a.dlq", "status": "parked"}, False),
        ({"exchange": "x", "routing_key": "k"}, False),
    ],
)
def test_only_searches_and_time_ranges_take_two_steps(filters, two_steps):
    where = queries.filter_messages(filters).query.where
    assert queries._filters_on(where, queries.MISJUDGED_COLUMNS) is two_steps
