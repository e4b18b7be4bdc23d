"""Anonymous users reach the login page and nothing else (security review finding 8): not
the API's schema or docs, not Django's admin login form (which has no throttling)."""

import pytest
from django.test import Client

from dlq.accounts.tokens import create_token
from tests.factories import client_for, make_user

pytestmark = pytest.mark.django_db


def test_the_api_schema_and_docs_need_a_token_or_a_session():
    anonymous = Client()
    refused = anonymous.get("/api/v1/openapi.json")
    assert refused.status_code == 401 and refused["WWW-Authenticate"] == "Bearer"
    assert "paths" not in refused.content.decode()
    docs = anonymous.get("/api/v1/docs")
    assert docs.status_code == 302 and docs["Location"] == "/login/?next=/api/v1/docs"

    token = Client(headers={"Authorization": f"Bearer {create_token(make_user('viewer'))}"})
    assert "paths" in token.get("/api/v1/openapi.json").json()
    session = client_for(make_user("viewer"))
    assert session.get("/api/v1/docs").status_code == 200


def test_a_user_without_a_role_is_refused_the_schema():
    nobody = client_for(make_user(None))
    assert nobody.get("/api/v1/openapi.json").status_code == 403
    bad_token = Client(headers={"Authorization": "Bearer dlq_not-a-token"})
    assert bad_token.get("/api/v1/openapi.json").status_code == 401


def test_the_admin_sends_anonymous_users_to_the_consoles_login():
    login = Client().get("/admin/login/")
    assert login.status_code == 302 and login["Location"].startswith("/login/?next=/admin/")
    landed = Client().get("/admin/", follow=True)
    assert landed.request["PATH_INFO"] == "/login/"  # the console's form, never the admin's
