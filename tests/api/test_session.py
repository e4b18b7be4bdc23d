import pytest
from django.test import Client

from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_it_shows_a_login_form_with_csrf():
    response = Client().get("/login/")
    assert response.status_code == 200
    assert b'name="csrfmiddlewaretoken"' in response.content
    assert b'name="username"' in response.content


def test_it_logs_in_with_csrf_and_reads_the_api_with_the_session():
    user = make_user("viewer")
    user.set_password("s3cret-pass-phrase")
    user.save()
    client = Client(enforce_csrf_checks=True)
    client.get("/login/")
    token = client.cookies["csrftoken"].value
    form = {"username": user.username, "password": "s3cret-pass-phrase"}
    assert client.post("/login/", form).status_code == 403  # no CSRF token
    response = client.post("/login/", {**form, "csrfmiddlewaretoken": token})
    assert response.status_code == 302
    assert client.get("/api/v1/queues").status_code == 200

    client.post("/logout/", {"csrfmiddlewaretoken": client.cookies["csrftoken"].value})
    assert client.get("/api/v1/queues").status_code == 401


def test_it_escapes_what_the_login_page_echoes():
    response = Client().get("/login/", {"next": '"><script>alert(1)</script>'})
    assert b"<script>alert(1)" not in response.content
