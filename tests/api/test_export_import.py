"""GET /api/v1/messages/export and POST /api/v1/messages/import (contract: "Export and
import"): the lines are the detail's fields, the roles, the 400s naming a line and a field,
all or nothing, and the audit rows of both."""

import base64
import json
import re

import pytest

from dlq.models import AuditEntry, Message
from dlq.models.actions import AuditAction
from dlq.redrive import policies
from tests.factories import client_for, make_message, make_messages, make_user

pytestmark = pytest.mark.django_db
NDJSON = "application/x-ndjson"


def _export(client, query: str = "") -> list[dict]:
    response = client.get(f"/api/v1/messages/export{query}")
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"] == NDJSON
    assert response["Content-Disposition"].startswith('attachment; filename="dlq-messages-')
    text = b"".join(response.streaming_content).decode()
    return [json.loads(line) for line in text.splitlines()]


def _import(client, lines, query: str = ""):
    body = b"".join(
        (line if isinstance(line, bytes) else json.dumps(line).encode()) + b"\n" for line in lines
    )
    return client.post(f"/api/v1/messages/import{query}", body, content_type=NDJSON)


def test_an_export_line_is_the_detail_without_history_and_versions():
    viewer = client_for(make_user("viewer"), token=True)
    m = make_message(headers={"retry": 3, "tenant": "t-1"}, message_id="m-1", priority=4)

    [line] = _export(viewer)

    detail = viewer.get(f"/api/v1/messages/{m.pk}").json()
    del detail["history"], detail["versions"]
    assert line == detail
    assert line["headers"]["retry"] == {"type": "int32", "value": 3}


def test_an_export_line_carries_the_redrive_state_as_the_detail_does():
    viewer = client_for(make_user("viewer"), token=True)
    held, free = make_message(queue="flaky.dlq"), make_message(queue="other.dlq")
    policies.save("admin", {"name": "flaky", "match": {"queue": "flaky.dlq"},
                            "target": "original", "delay_seconds": 60, "backoff": 2,
                            "max_attempts": 3}, "flaky")  # fmt: skip

    lines = {line["id"]: line for line in _export(viewer)}

    detail = viewer.get(f"/api/v1/messages/{held.pk}").json()
    assert lines[held.pk]["redrive"] == detail["redrive"] and detail["redrive"]["attempt"] == 0
    assert lines[free.pk]["redrive"] is None


def test_the_export_takes_the_list_filters_and_is_audited_with_filter_and_count():
    user = make_user("viewer")
    viewer = client_for(user, token=True)
    make_messages(3, queue="a.dlq")
    kept = make_messages(2, queue="b.dlq")

    lines = _export(viewer, "?queue=b.dlq")

    assert [line["id"] for line in lines] == [m.pk for m in reversed(kept)]  # newest first
    entry = AuditEntry.objects.get(action=AuditAction.EXPORT)
    assert entry.actor_name == user.username
    assert json.loads(entry.detail) == {"filter": {"queue": "b.dlq"}, "count": 2,
                                        "complete": True}  # fmt: skip


def test_a_bad_filter_is_a_400_with_its_field():
    viewer = client_for(make_user("viewer"), token=True)
    response = viewer.get("/api/v1/messages/export?status=lost&received_after=yesterday")
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"status", "received_after"}
    assert not AuditEntry.objects.filter(action=AuditAction.EXPORT).exists()


def test_roles():
    anonymous = client_for(make_user("viewer"))
    anonymous.logout()
    assert anonymous.get("/api/v1/messages/export").status_code == 401
    assert _import(anonymous, []).status_code == 401
    for role in ("viewer", "operator"):
        client = client_for(make_user(role), token=True)
        assert client.get("/api/v1/messages/export").status_code == 200
        assert _import(client, []).status_code == 403, role


def test_import_stores_each_line_as_a_new_parked_message_and_audits_the_source_ids():
    admin_user = make_user("admin")
    admin = client_for(admin_user, token=True)
    originals = make_messages(2, headers={"tenant": "t-1"}, reason="expired")
    lines = _export(admin)

    response = _import(admin, lines, "?queue=staging.dlq")

    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["imported"] == 2
    mapping = {pair["source_id"]: pair["id"] for pair in answer["messages"]}
    assert set(mapping) == {m.pk for m in originals}
    for original in originals:
        copy = Message.objects.get(pk=mapping[original.pk])
        assert copy.status == "parked" and copy.queue == "staging.dlq"
        assert bytes(copy.body) == bytes(original.body)
        assert copy.headers_json == original.headers_json
        assert copy.properties_json == original.properties_json
        for name in ("death_reason", "failed_queue", "group", "exception_type",
                     "message_type", "original_exchange", "first_death_at"):  # fmt: skip
            assert getattr(copy, name) == getattr(original, name), name
        assert copy.previous_id is None
    entry = AuditEntry.objects.get(action=AuditAction.IMPORT)
    assert entry.actor_name == admin_user.username
    assert entry.message_ids == [mapping[line["id"]] for line in lines]
    detail = json.loads(entry.detail)
    assert detail["source_ids"] == [line["id"] for line in lines]
    assert (detail["count"], detail["source"], detail["queue"]) == (2, "api", "staging.dlq")


def test_a_bad_third_line_stores_nothing_and_is_named():
    admin = client_for(make_user("admin"), token=True)
    make_messages(3)
    lines = _export(admin)
    lines[2]["body_base64"] = "not base64!"
    before = Message.objects.count()

    response = _import(admin, lines)

    assert response.status_code == 400
    assert response.json()["errors"] == {"line 3.body_base64": ["is not valid base64"]}
    assert Message.objects.count() == before
    assert not AuditEntry.objects.filter(action=AuditAction.IMPORT).exists()


def test_bad_lines_name_their_number_and_field():
    admin = client_for(make_user("admin"), token=True)
    make_message()
    [line] = _export(admin)
    bad_header = {**line, "headers": {"h": {"type": "int8", "value": 300}}}
    bad_property = {**line, "properties": {"priority": 256}}
    no_queue = {k: v for k, v in line.items() if k != "queue"}
    response = _import(admin, [line, b"{not json", bad_header, b"", bad_property, no_queue,
                               b"[1]"])  # fmt: skip
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert set(errors) == {"line 2", "line 3.headers.h", "line 5.properties.priority",
                           "line 6.queue", "line 7"}  # fmt: skip
    assert errors["line 6.queue"] == ["is required"]
    assert Message.objects.count() == 1


def test_a_body_above_the_limit_is_refused():
    admin = client_for(make_user("admin"), token=True)
    make_message()
    [line] = _export(admin)
    line["body_base64"] = base64.b64encode(b"x" * (16 * 2**20 + 1)).decode()
    response = _import(admin, [line])
    assert response.status_code == 400
    assert "at most 16777216" in response.json()["errors"]["line 1.body_base64"][0]


def test_an_empty_import_is_a_400():
    admin = client_for(make_user("admin"), token=True)
    response = _import(admin, [b"", b"  "])
    assert response.status_code == 400
    assert response.json()["errors"] == {"__all__": ["no messages to import: every line is blank"]}


def test_the_list_page_links_the_export_of_its_filter_and_the_audit_says_it():
    user = make_user("viewer")
    viewer, viewer_name = client_for(user), user.username
    make_messages(2, queue="a.dlq")
    page = viewer.get("/messages/?queue=a.dlq&tz=Europe/Berlin").content.decode()
    link = re.search(r'href="(/api/v1/messages/export\?[^"]*)" download', page)[1]
    assert sorted(link.split("?")[1].split("&amp;")) == ["queue=a.dlq", "tz=Europe%2FBerlin"]

    assert len(_export(viewer, "?queue=a.dlq&tz=Europe/Berlin")) == 2

    audit_page = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", viewer.get("/audit/").content.decode()))
    assert f"{viewer_name} exported 2 messages in a.dlq" in audit_page


def test_an_import_reads_as_a_sentence_on_the_audit_page(viewer):
    ada = make_user("admin")
    admin = client_for(ada, token=True)
    make_message()
    assert _import(admin, _export(admin), "?queue=staging.dlq").status_code == 200
    audit_page = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", viewer.get("/audit/").content.decode()))
    assert f"{ada.username} imported 1 message into staging.dlq from api" in audit_page


@pytest.mark.django_db(transaction=True)  # the close ends the request: its connection too
def test_an_export_the_client_leaves_is_audited_as_stopped_short():
    viewer = client_for(make_user("viewer"), token=True)
    make_messages(501)  # two chunks of the keyset walk
    response = viewer.get("/api/v1/messages/export")
    first = next(iter(response.streaming_content))
    assert first.count(b"\n") == 500
    assert not AuditEntry.objects.filter(action=AuditAction.EXPORT).exists()

    response.close()  # as the server does when the client goes away

    entry = AuditEntry.objects.get(action=AuditAction.EXPORT)
    assert json.loads(entry.detail) == {"filter": {}, "count": 500, "complete": False}
    audit_page = client_for(make_user("viewer")).get("/audit/").content.decode()
    assert "(the download stopped short)" in audit_page
