"""The list's trace_id filter, and trace_id and trace_url in the list and the detail."""

import pytest

from tests.factories import client_for, make_message, make_user

pytestmark = pytest.mark.django_db
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TEMPO = "https://tempo.example/explore?orgId=1&traceId={trace_id}"


@pytest.fixture
def api():
    return client_for(make_user("viewer"), token=True)


@pytest.fixture
def traced():
    w3c = make_message(headers={"traceparent": f"00-{TRACE}-00f067aa0ba902b7-01"})
    b3 = make_message(headers={"X-B3-TraceId": "a3ce929d0e0e4736"})
    same = make_message(headers={"sentry-trace": f"{TRACE}-b4df6ef7e4e4a6a8-1"})
    untraced = make_message()
    return w3c, b3, same, untraced


def test_it_filters_by_trace_id_in_any_case(api, traced):
    w3c, b3, same, _ = traced

    def ids(trace: str) -> list[int]:
        found = api.get("/api/v1/messages", {"trace_id": trace}).json()["results"]
        return [m["id"] for m in found]

    assert ids(TRACE) == [same.id, w3c.id]
    assert ids(TRACE.upper()) == [same.id, w3c.id]
    assert ids("a3ce929d0e0e4736") == [b3.id]
    assert ids("f" * 32) == []


@pytest.mark.parametrize("junk", ["xyz", "0" * 32, TRACE[:20], TRACE + "0", "a3ce-929d0e0e4736"])
def test_a_trace_id_that_cannot_be_one_is_a_400_naming_the_field(api, junk):
    response = api.get("/api/v1/messages", {"trace_id": junk})
    assert response.status_code == 400
    assert "trace_id" in str(response.json()) and "hexadecimal" in str(response.json())


def test_list_and_detail_give_trace_id_and_trace_url(api, traced, settings):
    settings.DLQ_TRACE_URL = TEMPO
    w3c, b3, _, untraced = traced
    rows = {m["id"]: m for m in api.get("/api/v1/messages").json()["results"]}
    assert rows[w3c.id]["trace_id"] == TRACE
    assert rows[w3c.id]["trace_url"] == TEMPO.replace("{trace_id}", TRACE)
    assert (rows[untraced.id]["trace_id"], rows[untraced.id]["trace_url"]) == ("", "")
    detail = api.get(f"/api/v1/messages/{b3.id}").json()
    assert detail["trace_id"] == "a3ce929d0e0e4736"
    assert detail["trace_url"] == TEMPO.replace("{trace_id}", "a3ce929d0e0e4736")


def test_without_dlq_trace_url_there_is_no_url(api, traced, settings):
    settings.DLQ_TRACE_URL = ""
    detail = api.get(f"/api/v1/messages/{traced[0].id}").json()
    assert (detail["trace_id"], detail["trace_url"]) == (TRACE, "")


def test_a_bulk_job_filter_takes_trace_id(traced):
    operator = client_for(make_user("operator"), token=True)
    response = operator.post(
        "/api/v1/jobs",
        {"action": "discard", "filter": {"trace_id": TRACE}, "reason": "one bad request"},
        content_type="application/json",
    )
    assert response.status_code == 202, response.content
    assert response.json()["total"] == 2
