"""The `vhost` filter of GET /api/v1/queues and GET /api/v1/messages: exact, slashes and all,
and a clear 400 for a value the database cannot hold."""

import pytest

from dlq.drain import store
from tests.factories import client_for, make_messages, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    return client_for(make_user("viewer"), token=True)


@pytest.fixture
def estate(unique):
    """The same queue name parked in three vhosts (one with a slash in its name)."""
    queue = f"{unique}.dlq"
    made = {}
    for vhost, count in (("/", 1), (f"{unique}-billing", 2), (f"{unique}/a/b", 3)):
        made[vhost] = make_messages(count, queue=queue, vhost=vhost)
    store.note_queues(f"{unique}-quiet", [{"name": f"{unique}.quiet", "type": "quorum"}])
    return queue, made


def queue_rows(client, **params) -> list[tuple[str, str, int]]:
    response = client.get("/api/v1/queues", params)
    assert response.status_code == 200, response.content
    return sorted((q["vhost"], q["name"], q["parked"]) for q in response.json()["results"])


def test_queues_filter_by_vhost(client, estate, unique):
    queue, _ = estate
    assert queue_rows(client, vhost=f"{unique}-billing") == [(f"{unique}-billing", queue, 2)]
    assert queue_rows(client, vhost=f"{unique}/a/b") == [(f"{unique}/a/b", queue, 3)]
    quiet = queue_rows(client, vhost=f"{unique}-quiet")
    assert quiet == [(f"{unique}-quiet", f"{unique}.quiet", 0)]
    assert queue_rows(client, vhost=f"{unique}-none") == []
    everything = {row[:2] for row in queue_rows(client)}
    assert {("/", queue), (f"{unique}-billing", queue), (f"{unique}/a/b", queue)} <= everything
    assert queue_rows(client, vhost="") == queue_rows(client)  # a blank filter is absent


def test_the_queue_list_documents_its_filter(client):
    spec = client.get("/api/v1/openapi.json").json()
    params = spec["paths"]["/api/v1/queues"]["get"]["parameters"]
    assert [p["name"] for p in params] == ["vhost"]


@pytest.mark.parametrize("bad", ["a\x00b", "v" * 256])
@pytest.mark.parametrize("path", ["/api/v1/queues", "/api/v1/messages"])
def test_a_bad_vhost_filter_is_a_clear_400(client, path, bad):
    response = client.get(path, {"vhost": bad})
    assert response.status_code == 400
    body = response.json()
    assert "vhost" in str(body)


def test_messages_filter_by_vhost(client, estate, unique):
    queue, made = estate
    for vhost, stored in made.items():
        response = client.get("/api/v1/messages", {"vhost": vhost, "queue": queue})
        assert response.status_code == 200
        results = response.json()["results"]
        assert [m["id"] for m in results] == [m.pk for m in reversed(stored)]
        assert {m["vhost"] for m in results} == {vhost}
