import gzip

import pytest

from tests.factories import client_for, make_message, make_user

pytestmark = pytest.mark.django_db


def search(q: str, **filters) -> list[int]:
    client = client_for(make_user("viewer"), token=True)
    response = client.get("/api/v1/messages", {"q": q, **filters})
    assert response.status_code == 200
    return [m["id"] for m in response.json()["results"]]


def test_it_finds_text_in_the_body_ignoring_case():
    hit = make_message(body=b'{"customer": "ACME Widgets", "order": 7}')
    make_message(body=b'{"customer": "Globex"}')
    assert search("acme widgets") == [hit.id]


def test_it_finds_header_values_and_names():
    hit = make_message(headers={"tenant": "north-region-7", "attempt": 3})
    make_message(headers={"tenant": "south"})
    assert search("north-region") == [hit.id]
    assert search("tenant=north") == [hit.id]


def test_it_finds_text_inside_a_gzip_body():
    hit = make_message(body=gzip.compress(b"invoice 4711 failed"), content_encoding="gzip")
    assert search("invoice 4711") == [hit.id]


def test_it_finds_the_failure_headers_of_frameworks():
    hit = make_message(headers={"x-exception-message": "Connection refused: db-primary"})
    assert search("db-primary") == [hit.id]


def test_it_finds_nothing_for_text_that_is_not_there():
    make_message(body=b"\x00\x01\x02binary")
    assert search("nowhere-to-be-found") == []


def test_it_treats_search_text_literally():
    hit = make_message(body=b"discount 100% off_now")
    make_message(body=b"discount 1000 offXnow")
    assert search("100%") == [hit.id]
    assert search("off_now") == [hit.id]


def test_it_combines_a_search_with_the_filters_that_match_two_columns():
    # exchange and routing_key match the delivered or the original value (an OR inside the
    # query), and a time range takes the page's two-step path: the fuzzer found a 500 there.
    hit = make_message(body=b"invoice 4711", exchange="billing", routing_key="invoice.failed")
    make_message(body=b"invoice 4711", exchange="shipping")
    make_message(body=b"receipt", exchange="billing")
    later = "2999-01-01T00:00:00Z"
    assert search("invoice", exchange="billing", received_before=later) == [hit.id]
    assert search("invoice", routing_key="invoice.failed", received_before=later) == [hit.id]
