import pytest

from tests.factories import client_for, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    return client_for(make_user("viewer"), token=True)


def test_it_answers_404_json_for_an_unknown_message(client):
    for url in ("/api/v1/messages/987654", "/api/v1/messages/99999999999999999999999"):
        response = client.get(url)
        assert response.status_code == 404
        assert response["Content-Type"].startswith("application/json")
        assert response.json()["detail"].startswith("no message")


def test_it_answers_400_for_an_id_that_is_not_a_number(client):
    response = client.get("/api/v1/messages/abc")
    assert response.status_code == 400
    assert response.json() == {
        "detail": "invalid input",
        "errors": {"id": ["must be a whole number"]},
    }


def test_it_lists_every_bad_field_at_once(client):
    params = {"limit": "900", "status": "lost", "received_after": "yesterday", "cursor": "x"}
    response = client.get("/api/v1/messages", params)
    assert response.status_code == 400
    body = response.json()
    assert body["detail"] == "invalid input"
    assert body["errors"]["limit"] == ["must be at most 500"]
    assert body["errors"]["status"] == [
        "must be one of 'parked', 'replaying', 'replayed' or 'discarded'"
    ]
    assert body["errors"]["received_after"][0].startswith("must be an ISO 8601 date-time")
    assert body["errors"]["cursor"] == ["not a cursor this API gave out"]


@pytest.mark.parametrize(
    "value",
    ["1700000000", "2025-13-01", "2025-05-01T25:00", "May 1 2025", "2025-05-01T12:00:00 00:00"],
)
def test_it_parses_dates_strictly(client, value):
    response = client.get("/api/v1/messages", {"received_before": value})
    assert response.status_code == 400
    assert list(response.json()["errors"]) == ["received_before"]


def test_it_refuses_an_overlong_search(client):
    response = client.get("/api/v1/messages", {"q": "x" * 201})
    assert response.status_code == 400
    assert response.json()["errors"] == {"q": ["must be at most 200 characters"]}


def test_it_refuses_nul_characters_in_text_filters(client):
    response = client.get("/api/v1/messages?queue=a%00b&q=%00")
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "queue": ["must not contain NUL characters"],
        "q": ["must not contain NUL characters"],
    }
