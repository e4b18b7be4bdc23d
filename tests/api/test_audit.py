"""The audit trail through the API: newest first, keyset pages, filters, CSV export."""

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest

from dlq import audit
from dlq.actions import message as message_actions
from tests.factories import client_for, make_message, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer():
    return client_for(make_user("viewer"), token=True)


@pytest.fixture
def actor(unique):
    return f"auditor-{unique}"


def _rows(client, **params) -> list[dict]:
    response = client.get("/api/v1/audit", params)
    assert response.status_code == 200, response.content
    return response.json()["results"]


def test_it_lists_what_operators_did_newest_first(viewer):
    operator = make_user("operator")
    m = make_message(content_type="application/json")
    client = client_for(operator, token=True)
    client.patch(f"/api/v1/messages/{m.pk}", {"body_text": "[]", "reason": "empty it"},
                 content_type="application/json", headers={"X-Request-ID": "edit-1"})  # fmt: skip
    client.post(f"/api/v1/messages/{m.pk}/discard", {"reason": "poison"},
                content_type="application/json")  # fmt: skip

    rows = _rows(viewer, actor=operator.username)

    assert [r["action"] for r in rows] == ["discard", "edit"]
    discard, edit = rows
    assert discard["actor"] == operator.username
    assert discard["actor_id"] == operator.pk
    assert (discard["message_ids"], discard["job_id"]) == ([m.pk], None)
    assert (discard["reason"], discard["diff"]) == ("poison", None)
    assert edit["diff"]["body"]["after"] == "[]"
    assert edit["request_id"] == "edit-1"
    assert discard["at"] >= edit["at"]


def test_it_pages_with_a_cursor(viewer, actor):
    for n in range(5):
        audit.record(actor, "discard", f"r{n}", [n + 1])
    page = {"actor": actor, "limit": 2}
    first = viewer.get("/api/v1/audit", page).json()
    second = viewer.get("/api/v1/audit", {**page, "cursor": first["next_cursor"]}).json()
    third = viewer.get("/api/v1/audit", {**page, "cursor": second["next_cursor"]}).json()
    reasons = [r["reason"] for page in (first, second, third) for r in page["results"]]
    assert reasons == ["r4", "r3", "r2", "r1", "r0"]
    assert third["next_cursor"] is None


def test_it_filters_by_a_message_id_without_matching_longer_ids(viewer, actor):
    for ids in ([7], [17, 70], [1, 7, 9], [700], [9, 7], [7, 8], [77]):
        audit.record(actor, "discard", str(ids), ids)
    found = [r["message_ids"] for r in _rows(viewer, actor=actor, message=7)]
    assert found == [[7, 8], [9, 7], [1, 7, 9], [7]]


def test_it_filters_by_action_job_and_time(viewer, actor):
    audit.record(actor, "edit", "old", [1])
    audit.record(actor, "job_create", "bulk", job_id=42)
    audit.record(actor, "discard", "junk", [2])
    assert [r["reason"] for r in _rows(viewer, actor=actor, action="edit")] == ["old"]
    assert [r["reason"] for r in _rows(viewer, job=42)] == ["bulk"]
    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    past = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    assert _rows(viewer, actor=actor, after=future) == []
    assert _rows(viewer, actor=actor, before=past) == []
    assert len(_rows(viewer, actor=actor, after=past, before=future)) == 3


def test_it_refuses_bad_filters_field_by_field(viewer):
    response = viewer.get("/api/v1/audit", {"action": "delete", "message": "x", "limit": 501,
                                            "cursor": "nope", "after": "yesterday",
                                            "format": "xml", "actor": "a\x00"})  # fmt: skip
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {
        "action", "message", "limit", "cursor", "after", "format", "actor"
    }  # fmt: skip


def test_it_exports_csv_as_a_download_with_formulas_defused(viewer, actor):
    m = make_message()
    message_actions.discard(m.pk, actor, '=HYPERLINK("http://evil","x")', request_id="csv-1")
    audit.record(actor, "restore", 'plain, with "quotes"\nand a newline', [m.pk])

    response = viewer.get("/api/v1/audit", {"format": "csv", "actor": actor})

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    disposition = response["Content-Disposition"]
    assert disposition.startswith('attachment; filename="dlq-audit-')
    assert disposition.endswith('.csv"')
    assert response.has_header("X-Request-ID")
    text = b"".join(response.streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["action"] for r in rows] == ["restore", "discard"]
    assert rows[0]["reason"] == 'plain, with "quotes"\nand a newline'
    assert rows[1]["reason"] == '\'=HYPERLINK("http://evil","x")'
    assert (rows[1]["message_ids"], rows[1]["request_id"]) == (f"[{m.pk}]", "csv-1")


def test_it_exports_every_matching_row_in_batches(viewer, actor, monkeypatch):
    monkeypatch.setattr("dlq.audit.CSV_BATCH", 3)
    for n in range(8):
        audit.record(actor, "discard", f"r{n}", [n + 1])
    response = viewer.get("/api/v1/audit", {"format": "csv", "actor": actor, "limit": 1})
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["reason"] for r in rows] == [f"r{n}" for n in range(7, -1, -1)]


def test_it_exports_only_a_header_when_nothing_matches(viewer, actor):
    response = viewer.get("/api/v1/audit", {"format": "csv", "actor": actor})
    text = b"".join(response.streaming_content).decode()
    assert text.splitlines() == [",".join(audit.CSV_COLUMNS)]
