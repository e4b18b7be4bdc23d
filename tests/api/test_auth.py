import hashlib
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client, RequestFactory
from ninja.errors import AuthorizationError

from dlq.accounts.tokens import create_token
from dlq.api.auth import SessionAuth
from dlq.models import ApiToken
from tests.factories import client_for, make_message, make_user

pytestmark = pytest.mark.django_db


def test_it_answers_401_json_without_credentials():
    response = Client().get("/api/v1/messages")
    assert response.status_code == 401
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["WWW-Authenticate"] == "Bearer"
    assert "detail" in response.json()


@pytest.mark.parametrize(
    "header", ["Bearer dlq_not-a-real-token", "Bearer ", "Basic Z3Vlc3Q6Z3Vlc3Q=", "dlq_x"]
)
def test_it_answers_401_for_a_bad_token(header):
    response = Client(headers={"Authorization": header}).get("/api/v1/queues")
    assert response.status_code == 401


def test_it_reads_with_a_viewer_token():
    message = make_message()
    client = client_for(make_user("viewer"), token=True)
    assert client.get("/api/v1/messages").json()["results"][0]["id"] == message.id
    assert client.get(f"/api/v1/messages/{message.id}").status_code == 200
    assert client.get("/api/v1/queues").status_code == 200


@pytest.mark.parametrize("role", ["viewer", "operator", "admin"])
@pytest.mark.parametrize("token", [True, False])
def test_it_lets_every_role_read(role, token):
    client = client_for(make_user(role), token=token)
    assert client.get("/api/v1/messages").status_code == 200


def test_it_lets_a_superuser_without_groups_read():
    client = client_for(make_user(None, is_superuser=True), token=True)
    assert client.get("/api/v1/queues").status_code == 200


@pytest.mark.parametrize("token", [True, False])
def test_it_answers_403_to_a_user_without_a_role(token):
    message = make_message()
    client = client_for(make_user(None), token=token)
    for url in ("/api/v1/messages", f"/api/v1/messages/{message.id}", "/api/v1/queues"):
        response = client.get(url)
        assert response.status_code == 403
        assert response.json() == {"detail": "this needs the viewer role"}


def test_it_stores_only_the_hash_of_a_token():
    user = make_user("viewer")
    token = create_token(user, "nightly report")
    stored = ApiToken.objects.get(user=user)
    assert stored.token_hash == hashlib.sha256(token.encode()).hexdigest()
    assert stored.name == "nightly report"
    assert token.startswith(stored.prefix) and len(stored.prefix) == 12
    assert not ApiToken.objects.filter(token_hash__contains=token[4:]).exists()
    assert token != create_token(user)


def test_it_refuses_the_token_of_an_inactive_user():
    user = make_user("viewer", is_active=False)
    client = client_for(user, token=True)
    assert client.get("/api/v1/queues").status_code == 401


def test_it_notes_token_use_at_most_once_a_minute():
    client = client_for(make_user("viewer"), token=True)
    client.get("/api/v1/queues")
    first = ApiToken.objects.get().last_used_at
    assert first is not None
    client.get("/api/v1/queues")
    assert ApiToken.objects.get().last_used_at == first
    ApiToken.objects.update(last_used_at=datetime.now(UTC) - timedelta(minutes=2))
    client.get("/api/v1/queues")
    assert ApiToken.objects.get().last_used_at > first


def test_it_does_not_fall_back_to_the_session_when_a_token_is_bad():
    client = client_for(make_user("viewer"))
    assert client.get("/api/v1/queues").status_code == 200
    response = client.get("/api/v1/queues", headers={"Authorization": "Bearer wrong"})
    assert response.status_code == 401


def test_it_keeps_the_session_behind_a_proxy_that_sends_basic_auth():
    client = client_for(make_user("viewer"))
    response = client.get("/api/v1/queues", headers={"Authorization": "Basic cHJveHk6cHc="})
    assert response.status_code == 200


def test_it_gives_a_token_the_current_role_of_its_user():
    user = make_user("viewer")
    client = client_for(user, token=True)
    assert client.get("/api/v1/queues").status_code == 200
    user.groups.clear()
    assert client.get("/api/v1/queues").status_code == 403


def _post(user, csrf: bool):
    request = RequestFactory().post("/api/v1/anything")
    request.user = user
    if csrf:
        request.COOKIES["csrftoken"] = "a" * 32
        request.META["HTTP_X_CSRFTOKEN"] = "a" * 32
    return request


def test_it_wants_csrf_on_session_requests_that_change_state():
    user = make_user("operator")
    with pytest.raises(AuthorizationError):
        SessionAuth("operator")(_post(user, csrf=False))
    assert SessionAuth("operator")(_post(user, csrf=True)) == user
