"""Users and API tokens from the console (admins only): a user is made with a role and a
password or none, deactivated (their session and tokens stop at once) and reactivated; a
token is made for a user and shown once; every change is audited; viewers and operators get
a 403 page; a POST without its CSRF token is refused; bad input is a form error, never a 500."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from dlq.accounts.roles import role_of
from dlq.accounts.tokens import create_token
from dlq.models import ApiToken, AuditEntry
from tests.factories import client_for, make_user, post
from tests.uiops import body

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-console-password"
ADMIN_PAGES = ["/users/", "/users/add/", "/tokens/add/"]
ADMIN_POSTS = ["/users/add/", "/users/{pk}/deactivate/", "/users/{pk}/activate/", "/tokens/add/"]


def bearer(token: str) -> Client:
    return Client(headers={"Authorization": f"Bearer {token}"})


def sign_in(client: Client, username: str, password: str):
    return post(client, "/login/", {"username": username, "password": password})


def audited(action: str) -> dict:
    return json.loads(AuditEntry.objects.get(action=action).detail)


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_viewers_and_operators_get_a_clear_403_on_every_admin_page(role):
    client, other = client_for(make_user(role)), make_user("viewer")
    for url in ADMIN_PAGES:
        refused = client.get(url)
        assert refused.status_code == 403, url
        assert "Not allowed" in body(refused) and "this needs the admin role" in body(refused)
        assert f"You are signed in as {role}." in body(refused)
    for url in ADMIN_POSTS:
        data = {"username": "sneaky", "role": "admin", "sign_in": "none", "user": other.pk}
        assert post(client, url.format(pk=other.pk), data).status_code == 403, url
    assert not get_user_model().objects.filter(username="sneaky").exists()
    assert not ApiToken.objects.exists() and not AuditEntry.objects.exists()
    assert "/users/" not in body(client.get("/tokens/"))  # no link to a page they cannot open


def test_anonymous_users_go_to_the_login_page():
    for url in ADMIN_PAGES:
        assert Client().get(url)["Location"].startswith("/login/")


def test_an_admin_adds_a_user_who_signs_in_with_their_role():
    admin = client_for(make_user("admin"))
    page = admin.get("/users/add/")
    assert page.status_code == 200 and "No password" in body(page)

    made = post(admin, "/users/add/", {"username": "night.oper", "role": "operator",
                                       "sign_in": "password", "password": PASSWORD,
                                       "password2": PASSWORD}, follow=True)  # fmt: skip
    assert "User night.oper added as operator." in body(made)
    user = get_user_model().objects.get(username="night.oper")
    assert role_of(user) == "operator" and user.check_password(PASSWORD)
    assert audited("user_create") == {"user": "night.oper", "role": "operator",
                                      "sign_in": "password"}  # fmt: skip
    assert PASSWORD not in AuditEntry.objects.get(action="user_create").detail
    row = body(admin.get("/users/")).split(f'id="user-{user.pk}"')[1].split("</tr>")[0]
    assert "operator" in row and "password" in row and "active" in row

    signed_in = Client()
    assert sign_in(signed_in, "night.oper", PASSWORD).status_code == 302
    assert signed_in.get("/messages/").status_code == 200


def test_a_user_with_no_password_cannot_sign_in_but_a_token_of_theirs_works():
    admin = client_for(make_user("admin"))
    post(admin, "/users/add/", {"username": "ci-bot", "role": "viewer", "sign_in": "none",
                                "password": "ignored-ignored"})  # fmt: skip
    bot = get_user_model().objects.get(username="ci-bot")
    assert not bot.has_usable_password() and role_of(bot) == "viewer"
    assert sign_in(Client(), "ci-bot", "ignored-ignored").status_code == 200  # the form again
    assert "no password (API tokens only)" in body(admin.get("/users/"))
    assert bearer(create_token(bot)).get("/api/v1/queues").status_code == 200


@pytest.mark.parametrize(
    ("data", "field", "says"),
    [
        ({"username": "", "role": "viewer", "sign_in": "none"}, "username", "required"),
        ({"username": "bad name!", "role": "viewer", "sign_in": "none"}, "username", "letters"),
        ({"username": "x" * 151, "role": "viewer", "sign_in": "none"}, "username", "at most 150"),
        ({"username": "ok", "role": "root", "sign_in": "none"}, "role", "not one of"),
        ({"username": "ok", "role": "viewer", "sign_in": "magic"}, "sign_in", "not one of"),
        ({"username": "ok", "role": "viewer", "sign_in": "password"}, "password",
         "initial password"),
        ({"username": "ok", "role": "viewer", "sign_in": "password", "password": "short",
          "password2": "short"}, "password", "too short"),
        ({"username": "ok", "role": "viewer", "sign_in": "password", "password": PASSWORD,
          "password2": PASSWORD + "x"}, "password2", "differ"),
        ({"username": "ok", "role": "viewer", "sign_in": "password", "password": "password123",
          "password2": "password123"}, "password", "too common"),
    ],
)  # fmt: skip
def test_bad_input_is_a_form_error_naming_the_field(data, field, says):
    admin = client_for(make_user("admin"))
    refused = post(admin, "/users/add/", data)
    assert refused.status_code == 400
    text = body(refused)
    assert says in text and f'id="id_{field}"' in text and 'class="field invalid"' in text
    assert not get_user_model().objects.filter(username__in=["ok", "bad name!"]).exists()
    assert not AuditEntry.objects.exists()


def test_a_taken_name_is_refused_whatever_its_case():
    admin_user = make_user("admin")
    admin = client_for(admin_user)
    refused = post(admin, "/users/add/", {"username": admin_user.username.upper(),
                                          "role": "viewer", "sign_in": "none"})  # fmt: skip
    assert refused.status_code == 400 and "exists" in body(refused)


def test_a_deactivated_user_loses_their_session_and_tokens_at_once_and_comes_back():
    admin = client_for(make_user("admin"))
    oper = make_user("operator")
    session, token = client_for(oper), create_token(oper)
    assert session.get("/messages/").status_code == 200

    done = post(admin, f"/users/{oper.pk}/deactivate/", follow=True)
    assert f"User {oper.username} deactivated" in body(done)
    assert session.get("/messages/")["Location"].startswith("/login/")
    assert bearer(token).get("/api/v1/queues").status_code == 401
    assert audited("user_deactivate") == {"user": oper.username}
    assert "deactivated" in body(admin.get("/users/"))

    post(admin, f"/users/{oper.pk}/activate/")
    assert bearer(token).get("/api/v1/queues").status_code == 200
    assert audited("user_activate") == {"user": oper.username}


def test_an_admin_cannot_deactivate_themselves_or_an_unknown_user():
    me = make_user("admin")
    admin = client_for(me)
    refused = post(admin, f"/users/{me.pk}/deactivate/", follow=True)
    assert "you cannot deactivate yourself" in body(refused)
    me.refresh_from_db()
    assert me.is_active and not AuditEntry.objects.exists()
    assert "no user 987654" in body(post(admin, "/users/987654/deactivate/", follow=True))


def test_a_post_without_its_csrf_token_is_refused():
    admin_user, oper = make_user("admin"), make_user("operator")
    admin = client_for(admin_user)  # enforces CSRF checks
    for url, data in [("/users/add/", {"username": "x", "role": "admin", "sign_in": "none"}),
                      (f"/users/{oper.pk}/deactivate/", {}),
                      ("/tokens/add/", {"user": admin_user.pk})]:  # fmt: skip
        assert admin.post(url, data).status_code == 403, url
    oper.refresh_from_db()
    assert oper.is_active and not ApiToken.objects.exists()
    assert not get_user_model().objects.filter(username="x").exists()


def test_an_admin_makes_a_token_that_is_shown_once_and_works():
    admin_user, oper = make_user("admin"), make_user("operator")
    admin = client_for(admin_user)
    form = body(admin.get("/tokens/add/"))
    assert oper.username in form

    made = post(admin, "/tokens/add/", {"user": oper.pk, "name": "ci-replays"})
    assert made.status_code == 200 and "no-store" in made["Cache-Control"]
    token = body(made).split('id="new-token"')[1].split('value="')[1].split('"')[0]
    assert token.startswith("dlq_") and "not be shown again" in body(made)
    assert bearer(token).get("/api/v1/messages").status_code == 200

    stored = ApiToken.objects.get()
    assert stored.user == oper and stored.name == "ci-replays"
    detail = audited("token_create")
    assert detail["user"] == oper.username and token not in json.dumps(detail)
    listing = body(admin.get("/tokens/"))
    assert stored.prefix in listing and token not in listing
    assert token not in str(dict(admin.session))


def test_reloading_the_page_that_shows_a_token_makes_no_second_one():
    admin_user, oper = make_user("admin"), make_user("operator")
    admin = client_for(admin_user)
    once = body(admin.get("/tokens/add/")).split('name="once" value="')[1].split('"')[0]
    form = {"user": oper.pk, "name": "ci-replays", "once": once}
    assert post(admin, "/tokens/add/", form).status_code == 200
    again = post(admin, "/tokens/add/", form, follow=True)  # the browser's "send again"
    assert "sent already" in body(again) and ApiToken.objects.count() == 1
    # A fresh form makes another.
    once = body(admin.get("/tokens/add/")).split('name="once" value="')[1].split('"')[0]
    assert post(admin, "/tokens/add/", {**form, "once": once}).status_code == 200
    assert ApiToken.objects.count() == 2


@pytest.mark.parametrize(
    ("data", "says"),
    [({"user": "", "name": "x"}, "required"), ({"user": "987654"}, "Select a valid choice"),
     ({"user": "abc"}, "Select a valid choice"),
     ({"user": "{u}", "name": "n" * 101}, "at most 100")],
)  # fmt: skip
def test_a_bad_token_form_is_a_form_error(data, says):
    admin_user = make_user("admin")
    admin = client_for(admin_user)
    data = {k: v.format(u=admin_user.pk) for k, v in data.items()}
    refused = post(admin, "/tokens/add/", data)
    assert refused.status_code == 400 and says in body(refused)
    assert not ApiToken.objects.exists()


def test_no_token_for_a_deactivated_user():
    admin, gone = client_for(make_user("admin")), make_user("viewer", is_active=False)
    refused = post(admin, "/tokens/add/", {"user": gone.pk})
    assert refused.status_code == 400 and not ApiToken.objects.exists()
