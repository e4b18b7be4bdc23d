"""Who may act through the API: 401 without credentials, 403 below operator, CSRF for the
session, and the request id every answer echoes and every audit row keeps."""

import pytest
from django.test import Client

from dlq.jobs import control
from dlq.models import Message, Status
from dlq.models.actions import AuditEntry, Job
from tests.factories import client_for, make_message, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def targets():
    message = make_message()
    job = control.create_job("ops", "discard", ids=[message.pk], reason="seed")
    return {"id": message.pk, "job": job.pk}


ACTIONS = [
    ("patch", "/api/v1/messages/{id}", {"reason": "fix", "body_text": "{}"}),
    ("post", "/api/v1/messages/{id}/replay", {"reason": "retry", "target": "failed_queue"}),
    ("post", "/api/v1/messages/{id}/discard", {"reason": "junk"}),
    ("post", "/api/v1/messages/{id}/restore", {"reason": "oops"}),
    ("post", "/api/v1/jobs", {"action": "discard", "ids": [1], "reason": "bulk"}),
    ("post", "/api/v1/jobs/{job}/cancel", None),
]
READS = ["/api/v1/messages/{id}/route", "/api/v1/jobs/{job}", "/api/v1/audit"]


def _call(client, method, url, body, targets, **extra):
    kwargs = {"content_type": "application/json"} if body is not None else {}
    return getattr(client, method)(url.format(**targets), body, **kwargs, **extra)


def _untouched(targets) -> None:
    assert Message.objects.get(pk=targets["id"]).status == Status.PARKED
    assert Job.objects.get(pk=targets["job"]).status == "pending"
    assert not AuditEntry.objects.exclude(action="job_create").exists()


@pytest.mark.parametrize(("method", "url", "body"), ACTIONS)
def test_it_answers_401_to_an_action_without_credentials(targets, method, url, body):
    response = _call(Client(), method, url, body, targets)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"
    _untouched(targets)


@pytest.mark.parametrize("url", READS)
def test_it_answers_401_to_a_read_without_credentials(targets, url):
    assert Client().get(url.format(**targets)).status_code == 401


@pytest.mark.parametrize("token", [True, False])
@pytest.mark.parametrize(("method", "url", "body"), ACTIONS)
def test_it_answers_403_to_a_viewer_on_every_action(targets, method, url, body, token):
    client = client_for(make_user("viewer"), token=token)
    if not token:  # a viewer with a valid CSRF token is still only a viewer
        client.get("/login/")
        csrf = client.cookies["csrftoken"].value
        response = _call(client, method, url, body, targets, headers={"X-CSRFToken": csrf})
    else:
        response = _call(client, method, url, body, targets)
    assert response.status_code == 403
    assert response.json() == {"detail": "this needs the operator role"}
    _untouched(targets)


@pytest.mark.parametrize(("method", "url", "body"), ACTIONS)
def test_it_answers_403_to_a_user_without_a_role(targets, method, url, body):
    response = _call(client_for(make_user(None), token=True), method, url, body, targets)
    assert response.status_code == 403
    _untouched(targets)


@pytest.mark.parametrize("url", READS)
def test_it_lets_a_viewer_read(targets, url):
    client = client_for(make_user("viewer"), token=True)
    assert client.get(url.format(**targets)).status_code == 200


def test_it_wants_csrf_when_an_operator_acts_through_the_session(targets):
    client = client_for(make_user("operator"))
    url = f"/api/v1/messages/{targets['id']}/discard"
    response = client.post(url, {"reason": "junk"}, content_type="application/json")
    assert response.status_code == 403
    assert response.json() == {"detail": "CSRF check failed"}
    assert Message.objects.get(pk=targets["id"]).status == Status.PARKED

    client.get("/login/")
    csrf = {"X-CSRFToken": client.cookies["csrftoken"].value}
    response = client.post(url, {"reason": "junk"}, content_type="application/json", headers=csrf)
    assert response.status_code == 200
    assert response.json()["status"] == "discarded"


def test_it_needs_no_csrf_with_a_token(targets):
    client = client_for(make_user("operator"), token=True)
    client.cookies.load({"csrftoken": "x" * 32})
    url = f"/api/v1/messages/{targets['id']}/discard"
    response = client.post(url, {"reason": "junk"}, content_type="application/json")
    assert response.status_code == 200


def test_it_echoes_the_request_id_and_keeps_it_in_the_audit_row(targets):
    client = client_for(make_user("operator"), token=True)
    url = f"/api/v1/messages/{targets['id']}/discard"
    response = client.post(url, {"reason": "junk"}, content_type="application/json",
                           headers={"X-Request-ID": "req-42.a:b_c"})  # fmt: skip
    assert response["X-Request-ID"] == "req-42.a:b_c"
    assert AuditEntry.objects.get(action="discard").request_id == "req-42.a:b_c"


def test_it_cleans_a_request_id_it_is_given():
    client = client_for(make_user("viewer"), token=True)
    given = "abc def<script>\"'\u00e9" + "x" * 100
    response = client.get("/api/v1/queues", headers={"X-Request-ID": given})
    assert response["X-Request-ID"] == ("abcdefscript" + "x" * 100)[:64]


def test_it_makes_up_a_request_id_when_none_is_usable():
    client = client_for(make_user("viewer"), token=True)
    first = client.get("/api/v1/queues")["X-Request-ID"]
    second = client.get("/api/v1/queues", headers={"X-Request-ID": "<>"})["X-Request-ID"]
    assert len(first) == len(second) == 32 and first != second
    assert Client().get("/api/v1/queues").has_header("X-Request-ID")  # on errors too
