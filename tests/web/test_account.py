"""The account page and the Slack one-time link page through Django's test client: who may
see them, the Telegram deep link, unlinking (your own; an admin anyone's), audited, and the
Slack link that links only on a POST with CSRF, once."""

import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from dlq.alerts import links
from dlq.models import AlertChannel, AuditEntry, ChatLink, LinkCode
from tests.factories import client_for, make_user, post
from tests.sentalerts import telegram_bot

pytestmark = pytest.mark.django_db

HOSTILE = '<img src=x onerror="alert(1)">'


def body(response) -> str:
    return response.content.decode()


def audit_rows(action: str) -> list[AuditEntry]:
    return list(AuditEntry.objects.filter(action=action).order_by("id"))


# --- who sees the account page ----------------------------------------------------------


def test_anonymous_users_go_to_the_login_page_and_come_back():
    for url in ("/account/", "/account/link/slack/abc/"):
        answer = Client().get(url)
        assert answer.status_code == 302
        assert answer.url.startswith("/login/?next=/account/")


@pytest.mark.parametrize("role", ["viewer", "operator", "admin"])
def test_every_role_has_an_account_page_reached_from_the_header(role):
    user = make_user(role)

    answer = client_for(user).get("/account/")

    assert answer.status_code == 200
    assert 'href="/account/" aria-current="page"' in body(answer)
    assert "No Slack or Telegram user is linked to your account." in body(answer)
    assert ("Everyone's chat links" in body(answer)) == (role == "admin")


def test_a_user_without_a_role_may_not():
    assert client_for(make_user(None)).get("/account/").status_code == 403


def test_the_page_lists_your_links_and_not_anyone_elses():
    me, other = make_user("viewer"), make_user("operator")
    links.link(me, "telegram", "4242", HOSTILE)
    links.link(other, "slack", "U0OTHER", "someone else")

    page = body(client_for(me).get("/account/"))

    assert "4242" in page and "U0OTHER" not in page
    assert HOSTILE not in page and "&lt;img src=x" in page  # the chat's name, escaped


# --- Telegram -----------------------------------------------------------------------------


def test_without_a_known_bot_the_page_says_how_one_comes():
    page = body(client_for(make_user("viewer")).get("/account/"))

    assert "No Telegram bot is known yet" in page
    assert "the bot's name appears here once the worker has asked Telegram" in page


def test_a_known_bot_gives_a_one_time_deep_link_that_links_who_sends_it():
    bot = telegram_bot("dlq_alerts_bot")
    user = make_user("viewer")
    client = client_for(user)
    assert "Link Telegram with @dlq_alerts_bot" in body(client.get("/account/"))

    answer = post(client, "/account/telegram/", {"bot": bot.key})

    assert answer.status_code == 200
    url = re.search(r'href="(https://t\.me/dlq_alerts_bot\?start=([A-Za-z0-9_-]+))"', body(answer))
    assert url, body(answer)
    code = url.group(2)
    stored = LinkCode.objects.get()
    assert (stored.user, stored.bot, stored.via) == (user, bot.key, "telegram")
    assert code not in stored.code_hash  # only its hash is kept
    assert timedelta(minutes=9) < stored.expires_at - timezone.now() <= timedelta(minutes=10)
    made = links.redeem(code, "telegram", chat_user="777", chat_name="ana")  # the bot's /start
    assert (made.user, made.chat_user) == (user, "777")


def test_the_deep_link_needs_a_post_with_csrf_and_a_known_bot():
    bot = telegram_bot()
    client = client_for(make_user("viewer"))

    assert client.get("/account/telegram/").status_code == 405
    assert client.post("/account/telegram/", {"bot": bot.key}).status_code == 403  # no CSRF
    assert post(client, "/account/telegram/", {"bot": "f" * 64}).status_code == 404
    assert post(client, "/account/telegram/", {}).status_code == 404
    assert not LinkCode.objects.exists()


def test_a_bot_whose_channel_is_gone_is_not_offered():
    bot = telegram_bot("old_bot")
    AlertChannel.objects.filter(kind="telegram").update(enabled=False)
    client = client_for(make_user("viewer"))

    assert "@old_bot" not in body(client.get("/account/"))
    assert post(client, "/account/telegram/", {"bot": bot.key}).status_code == 404


# --- unlinking ----------------------------------------------------------------------------


def test_you_unlink_your_own_link_audited():
    me = make_user("viewer")
    mine = links.link(me, "slack", "U0MINE", "me in slack")
    client = client_for(me)

    assert client.post(f"/account/links/{mine.pk}/unlink/").status_code == 403  # no CSRF
    answer = post(client, f"/account/links/{mine.pk}/unlink/", follow=True)

    assert not ChatLink.objects.exists()
    assert "Unlinked the Slack user me in slack." in body(answer)
    [row] = audit_rows("chat_unlink")
    assert (row.actor_name, row.reason) == (me.username, "unlinked on the account page")
    assert json.loads(row.detail)["chat_user"] == "U0MINE"


def test_nobody_but_an_admin_unlinks_someone_elses():
    owner, operator = make_user("viewer"), make_user("operator")
    theirs = links.link(owner, "telegram", "1001", "owner")

    answer = post(client_for(operator), f"/account/links/{theirs.pk}/unlink/")

    assert answer.status_code == 404
    assert ChatLink.objects.filter(pk=theirs.pk).exists()
    assert not audit_rows("chat_unlink")
    assert client_for(operator).get(f"/account/links/{theirs.pk}/unlink/").status_code == 405


def test_an_admin_sees_everyones_links_and_removes_any():
    owner, admin = make_user("viewer"), make_user("admin")
    theirs = links.link(owner, "telegram", "1001", "owner in telegram")
    client = client_for(admin)

    page = body(client.get("/account/"))
    assert owner.username in page and "1001" in page
    assert f"Remove the Telegram link of {owner.username}" in page

    answer = post(client, f"/account/links/{theirs.pk}/unlink/", follow=True)

    assert not ChatLink.objects.exists()
    assert f"Unlinked the Telegram user owner in telegram of {owner.username}." in body(answer)
    [row] = audit_rows("chat_unlink")
    assert row.actor_name == admin.username
    assert row.reason == f"removed by the admin {admin.username}"
    assert json.loads(row.detail)["user"] == owner.username
    assert post(client, f"/account/links/{theirs.pk}/unlink/").status_code == 404  # gone


# --- the Slack one-time link ---------------------------------------------------------------


def test_a_slack_link_asks_on_get_and_links_on_post_once():
    code = links.slack_code("U0ANA", "ana")
    user = make_user("operator")
    client = client_for(user)
    url = f"/account/link/slack/{code}/"

    asked = client.get(url)

    assert asked.status_code == 200
    assert "Link Slack user <strong>ana</strong>" in body(asked)
    assert "(<code>U0ANA</code>)" in body(asked)
    assert f"to your console account\n      <strong>{user.username}</strong>?" in body(asked)
    assert not ChatLink.objects.exists()  # GET never links

    assert client.post(url).status_code == 403  # no CSRF token: nothing happens
    assert not ChatLink.objects.exists()

    linked = post(client, url, follow=True)
    assert linked.redirect_chain[-1][0] == "/account/"
    assert "Your console account is now linked to the Slack user ana." in body(linked)
    assert ChatLink.objects.get().user == user
    [row] = audit_rows("chat_link")
    assert row.actor_name == user.username and json.loads(row.detail)["chat_user"] == "U0ANA"

    again = post(client, url)
    assert again.status_code == 410
    assert "This link code was used already" in body(again)
    assert client.get(url).status_code == 410


def test_forged_and_expired_slack_links_are_refused_clearly():
    client = client_for(make_user("viewer"))
    expired = links.slack_code("U0OLD")
    LinkCode.objects.update(expires_at=timezone.now() - timedelta(seconds=1))

    for code, status, words in [
        ("A" * 32, 400, "This link code is not valid."),
        ("short", 400, "This link code is not valid."),
        ("%3Cscript%3E" + "a" * 30, 400, "This link code is not valid."),
        (expired, 410, "This link code has expired"),
    ]:
        for answer in (client.get(f"/account/link/slack/{code}/"),
                       post(client, f"/account/link/slack/{code}/")):  # fmt: skip
            assert answer.status_code == status, code
            assert words in body(answer)
    assert not ChatLink.objects.exists()


def test_a_slack_user_linked_to_someone_else_moves_with_a_warning():
    before, me = make_user("operator"), make_user("operator")
    links.link(before, "slack", "U0MOVE", "mover")
    code = links.slack_code("U0MOVE", HOSTILE)
    client = client_for(me)

    asked = body(client.get(f"/account/link/slack/{code}/"))
    assert f"linked to\n      {before.username} now: confirming moves the link to you" in asked
    assert HOSTILE not in asked

    post(client, f"/account/link/slack/{code}/")

    assert ChatLink.objects.get(chat_user="U0MOVE").user == me
    assert [r.action for r in AuditEntry.objects.order_by("id")][-2:] == ["chat_unlink",
                                                                          "chat_link"]  # fmt: skip
