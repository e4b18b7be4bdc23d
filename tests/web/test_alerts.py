"""Alert pages through Django's test client: three personas and anonymous, every page and
POST at its permission edge, secrets never in any body, CSRF, and the test alert button
against the real local HTTP server."""

import time
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from dlq.alerts import channels, engine
from dlq.models import AlertAttempt, AlertChannel, AlertRule, Mute
from tests.factories import client_for, make_user, post

pytestmark = pytest.mark.django_db

SLACK_SECRET = "T0AAA/B0BBB/xoxSecretWebhookToken42"
SLACK_URL = f"https://hooks.slack.com/services/{SLACK_SECRET}"
BOT_TOKEN = "123456789:AAHsecretBotTokenValue-_42"
HOOK_SECRET = "hook-SECRET-abcdef123456"
SECRETS = (SLACK_SECRET, BOT_TOKEN, BOT_TOKEN.split(":")[1], HOOK_SECRET)


@pytest.fixture
def slack():
    return channels.create_channel("slack", "team", url=SLACK_URL)


@pytest.fixture
def telegram():
    return channels.create_channel("telegram", "oncall", token=BOT_TOKEN, chat_id="-1001")


def body(response) -> str:
    return response.content.decode()


def assert_no_secrets(response):
    text = body(response)
    for secret in SECRETS:
        assert secret not in text


def admin_urls(channel: AlertChannel) -> dict[str, str]:
    return {
        "add": "/alerts/channels/add/slack/",
        "edit": f"/alerts/channels/{channel.pk}/edit/",
        "enable": f"/alerts/channels/{channel.pk}/enable/",
        "disable": f"/alerts/channels/{channel.pk}/disable/",
        "delete": f"/alerts/channels/{channel.pk}/delete/",
        "test": f"/alerts/channels/{channel.pk}/test/",
        "rule_add": "/alerts/rules/add/",
    }


# --- permission edges ---------------------------------------------------------------


def test_it_sends_anonymous_users_to_the_login_page(slack):
    client = Client()
    for url in [
        "/",
        "/alerts/",
        "/alerts/attempts/",
        "/alerts/rules/",
        "/alerts/rules/add/",
        f"/alerts/channels/{slack.pk}/edit/",
        f"/alerts/channels/{slack.pk}/delete/",
    ]:
        response = client.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/login/?next="), url
    for url in admin_urls(slack).values():
        assert client.post(url, {"url": SLACK_URL})["Location"].startswith("/login/")
    assert AlertChannel.objects.count() == 1 and AlertChannel.objects.get().enabled


def test_it_refuses_users_without_a_role():
    client = client_for(make_user(None))
    for url in ["/", "/alerts/", "/alerts/attempts/", "/alerts/rules/"]:
        assert client.get(url).status_code == 403


@pytest.mark.parametrize("persona", ["viewer", "operator"])
def test_it_refuses_every_channel_change_below_admin(request, persona, slack):
    client = request.getfixturevalue(persona)
    urls = admin_urls(slack)
    for name in ("add", "edit", "delete", "rule_add"):
        assert client.get(urls[name]).status_code == 403, name
    for name, url in urls.items():
        response = post(client, url, {"url": "https://example.com/forged-hook-url"})
        assert response.status_code == 403, name
        assert "needs the admin role" in body(response)
    slack.refresh_from_db()
    assert (slack.enabled, slack.config, AlertChannel.objects.count()) == (
        True,
        {"url": SLACK_URL},
        1,
    )
    assert not AlertAttempt.objects.exists()


def test_it_refuses_a_post_without_the_csrf_token(admin, slack):
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(make_user("admin"))

    response = strict.post(f"/alerts/channels/{slack.pk}/disable/")

    assert response.status_code == 403
    assert "CSRF" in body(response)
    slack.refresh_from_db()
    assert slack.enabled


# --- what each role sees ------------------------------------------------------------


@pytest.mark.parametrize("persona", ["viewer", "operator", "admin"])
def test_it_shows_channels_masked_to_every_role(request, persona, slack, telegram):
    client = request.getfixturevalue(persona)
    _attempts(slack, 1)  # a row for the attempts page

    pages = [client.get(url) for url in ("/alerts/", "/alerts/attempts/", "/alerts/rules/")]

    for response in pages:
        assert response.status_code == 200
        assert_no_secrets(response)
    listing = body(pages[0])
    assert "https://hooks.slack.com/…en42" in listing
    assert "bot …-_42 chat -1001" in listing
    assert ("Send test alert" in listing) is (persona == "admin")
    assert ("/alerts/channels/add/" in listing) is (persona == "admin")
    assert (f"/alerts/channels/{slack.pk}/delete/" in listing) is (persona == "admin")
    assert "team" in body(pages[1])


@pytest.mark.parametrize(
    "url, shown",
    [
        (f"https://hooks.example.com?token={HOOK_SECRET}", "https://hooks.example.com/…3456"),
        (f"https://hooks.example.com:8443/x#{HOOK_SECRET}", "https://hooks.example.com:8443/…3456"),
        (f"https://hooks.example.com/{HOOK_SECRET}?a=b", "https://hooks.example.com/…?a=b"),
    ],
)
def test_a_webhook_url_is_masked_wherever_its_secret_is(viewer, url, shown):
    """A webhook keeps its secret in the path, the query or the fragment: the page shows
    its scheme, host and port, and the last characters of the whole."""
    channel = channels.create_channel("webhook", "hook", url=url)
    assert channel.masked == shown
    listing = body(viewer.get("/alerts/"))
    assert shown in listing
    assert HOOK_SECRET not in listing


def test_it_never_prefills_or_echoes_secrets_in_forms(admin, slack, telegram):
    for channel in (slack, telegram):
        response = admin.get(f"/alerts/channels/{channel.pk}/edit/")
        assert response.status_code == 200
        assert_no_secrets(response)
        assert channel.masked in body(response)
    # A rejected form (the name is taken) shows the error, not what was typed.
    response = post(
        admin,
        "/alerts/channels/add/webhook/",
        {"name": "team", "url": f"https://example.com/{HOOK_SECRET}"},
    )
    assert response.status_code == 400  # refused input, shown again with the reason
    assert "exists already" in body(response)
    assert_no_secrets(response)


# --- flows --------------------------------------------------------------------------


def test_it_creates_channels_of_each_kind(admin):
    post(admin, "/alerts/channels/add/slack/", {"name": "", "url": SLACK_URL})
    post(
        admin,
        "/alerts/channels/add/telegram/",
        {"name": "bot", "token": BOT_TOKEN, "chat_id": "@oncall_room"},
    )
    response = post(
        admin,
        "/alerts/channels/add/webhook/",
        {"name": "pager", "url": f"https://pager.example/{HOOK_SECRET}"},
        follow=True,
    )

    assert {c.name: c.config for c in AlertChannel.objects.all()} == {
        "slack": {"url": SLACK_URL},
        "bot": {"token": BOT_TOKEN, "chat_id": "@oncall_room"},
        "pager": {"url": f"https://pager.example/{HOOK_SECRET}"},
    }
    assert "Channel pager added." in body(response)
    assert "https://pager.example/…3456" in body(response)
    assert_no_secrets(response)


def test_it_rejects_bad_input_and_unknown_kinds(admin):
    response = post(admin, "/alerts/channels/add/telegram/", {"token": "nope", "chat_id": "1"})
    assert "bot token must look like" in body(response)
    assert post(admin, "/alerts/channels/add/sms/", {"url": SLACK_URL}).status_code == 404
    assert not AlertChannel.objects.exists()


def test_it_edits_a_channel_keeping_secrets_left_empty(admin, slack, telegram):
    post(admin, f"/alerts/channels/{slack.pk}/edit/", {"name": "team-2", "url": ""})
    post(admin, f"/alerts/channels/{telegram.pk}/edit/", {"name": "", "chat_id": "-2002"})

    slack.refresh_from_db()
    telegram.refresh_from_db()
    assert (slack.name, slack.config) == ("team-2", {"url": SLACK_URL})
    assert (telegram.name, telegram.config) == ("oncall", {"token": BOT_TOKEN, "chat_id": "-2002"})

    post(admin, f"/alerts/channels/{slack.pk}/edit/", {"url": f"{SLACK_URL}-new"})
    slack.refresh_from_db()
    assert slack.config == {"url": f"{SLACK_URL}-new"}


def test_it_disables_enables_and_deletes_a_channel(admin, slack):
    post(admin, f"/alerts/channels/{slack.pk}/disable/")
    slack.refresh_from_db()
    assert not slack.enabled and slack.disabled_reason.startswith("disabled by admin-")

    response = post(admin, f"/alerts/channels/{slack.pk}/enable/", follow=True)
    slack.refresh_from_db()
    assert slack.enabled and slack.disabled_reason == ""
    assert "Channel team enabled." in body(response)

    confirm = admin.get(f"/alerts/channels/{slack.pk}/delete/")
    assert "Delete channel team?" in body(confirm)
    assert AlertChannel.objects.filter(pk=slack.pk).exists()  # GET only asks
    post(admin, f"/alerts/channels/{slack.pk}/delete/")
    assert not AlertChannel.objects.filter(pk=slack.pk).exists()


def test_hidden_characters_in_channel_and_rule_names_show_as_escapes(admin, slack):
    """A name pasted with a right-to-left override must not reorder the page around it."""
    slack.name = "team\u202eevil\x07"
    slack.save()
    AlertRule.objects.create(name="rule\u202e", queues="*")
    enabled = post(admin, f"/alerts/channels/{slack.pk}/enable/", follow=True)  # flash message
    pages = [
        enabled,
        admin.get("/alerts/rules/"),
        admin.get(f"/alerts/channels/{slack.pk}/delete/"),
    ]
    for page in pages:
        assert "\u202e" not in body(page) and "\x07" not in body(page)
        assert '<span class="esc">\\u202e</span>' in body(page)


def test_it_refuses_gets_on_action_urls(admin, slack):
    for action in ("enable", "disable", "test"):
        assert admin.get(f"/alerts/channels/{slack.pk}/{action}/").status_code == 405


# --- the test alert button ----------------------------------------------------------


def test_the_test_alert_button_sends_and_lists_the_attempt(admin, viewer, endpoint, caplog):
    hook = channels.create_channel("webhook", "ops", url=f"{endpoint.url}/webhook/{HOOK_SECRET}")

    response = post(admin, f"/alerts/channels/{hook.pk}/test/", follow=True)

    assert "Test alert sent to ops (HTTP 200)." in body(response)
    [request] = endpoint.requests
    assert request.path == f"/webhook/{HOOK_SECRET}" and request.json()["kind"] == "test"
    for client in (admin, viewer):
        listed = client.get("/alerts/attempts/")
        assert "<td>ops</td>" in body(listed)
        assert "Sent" in body(listed) and '<td class="num">200</td>' in body(listed)
        assert_no_secrets(listed)
    assert HOOK_SECRET not in caplog.text


def test_a_permanent_error_disables_the_channel_and_shows_why(admin, viewer, endpoint):
    hook = channels.create_channel("webhook", "ops", url=f"{endpoint.url}/webhook/{HOOK_SECRET}")
    endpoint.reply(404, b"no_such_hook")

    response = post(admin, f"/alerts/channels/{hook.pk}/test/", follow=True)

    assert "was rejected" in body(response) and "the channel has been disabled" in body(response)
    hook.refresh_from_db()
    assert not hook.enabled
    for client in (admin, viewer):
        listing = client.get("/alerts/")
        assert '<p class="reason" role="note">' in body(listing)
        assert "HTTP 404: gone" in body(listing)
        assert "no_such_hook" not in body(listing)  # what answered is never shown
        assert_no_secrets(listing)


def test_the_test_alert_button_never_waits_for_a_retry(admin, endpoint):
    hook = channels.create_channel("webhook", "ops", url=f"{endpoint.url}/webhook/{HOOK_SECRET}")
    endpoint.reply(503, b"busy", headers={"Retry-After": "30"})
    started = time.monotonic()

    response = post(admin, f"/alerts/channels/{hook.pk}/test/", follow=True)

    assert time.monotonic() - started < 5
    assert "failed for now" in body(response) and "the worker retries at" in body(response)
    assert list(AlertAttempt.objects.order_by("id").values_list("status", flat=True)) == [
        "failed",
        "queued",
    ]


# --- attempts list ------------------------------------------------------------------


def _attempts(channel: AlertChannel, count: int) -> list[AlertAttempt]:
    now = timezone.now()
    return AlertAttempt.objects.bulk_create(
        AlertAttempt(
            channel=channel,
            channel_name=channel.name,
            kind="digest",
            status="sent",
            not_before=now,
            created_at=now,
            http_status=200,
        )
        for _ in range(count)
    )


def test_it_pages_attempts_newest_first(viewer, slack, telegram):
    _attempts(slack, 55)
    _attempts(telegram, 3)
    first = viewer.get("/alerts/attempts/")
    assert body(first).count("<td>oncall</td>") == 3 and body(first).count("<td>team</td>") == 47
    older = first.context["older"]
    assert older is not None

    second = viewer.get(f"/alerts/attempts/?before={older}", headers={"HX-Request": "true"})

    assert "<html" not in body(second)  # htmx gets the rows partial only
    assert body(second).count("<td>team</td>") == 8
    filtered = viewer.get(f"/alerts/attempts/?channel={telegram.pk}")
    assert body(filtered).count("<td>oncall</td>") == 3 and "<td>team</td>" not in body(filtered)
    assert viewer.get("/alerts/attempts/?before=abc").status_code == 400


# --- rules and mutes ----------------------------------------------------------------


def test_it_shows_rules_read_only_below_admin(viewer, operator):
    engine.ensure_default_rule()
    for client in (viewer, operator):
        page = body(client.get("/alerts/rules/"))
        assert "all enabled channels" in page and "/alerts/rules/add/" not in page
    assert ("Mute a queue" in body(viewer.get("/alerts/rules/"))) is False
    assert "Mute a queue" in body(operator.get("/alerts/rules/"))


def test_an_admin_adds_and_edits_rules(admin, slack):
    response = post(
        admin,
        "/alerts/rules/add/",
        {
            "name": "orders",
            "enabled": "on",
            "queues": "orders.*",
            "channels": [slack.pk],
            "threshold": 10,
            "window_minutes": 5,
            "digest_minutes": 15,
            "quiet_tz": "UTC",
        },
    )
    assert response.status_code == 302
    rule = AlertRule.objects.get(name="orders")
    assert rule.cursor == engine.horizon_id() and list(rule.channels.all()) == [slack]

    bad = post(
        admin,
        f"/alerts/rules/{rule.pk}/edit/",
        {
            "name": "orders",
            "queues": "orders.*",
            "threshold": 10,
            "window_minutes": 5,
            "digest_minutes": 15,
            "quiet_start": "22:00",
            "quiet_tz": "Mars/Olympus",
        },
    )
    assert "quiet hours need both" in body(bad) and "not a time zone name" in body(bad)
    rule.refresh_from_db()
    assert rule.quiet_start is None


def test_operators_mute_and_unmute_viewers_cannot(operator, viewer):
    until = (timezone.now() + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M")
    assert (
        post(viewer, "/alerts/mutes/add/", {"queue": "orders.dlq", "until": until}).status_code
        == 403
    )
    assert post(operator, "/alerts/mutes/add/", {"until": until}).status_code == 400

    post(
        operator, "/alerts/mutes/add/", {"queue": "orders.dlq", "until": until, "reason": "deploy"}
    )

    mute = Mute.objects.get()
    assert (mute.queue, mute.reason, mute.created_by_name[:9]) == (
        "orders.dlq",
        "deploy",
        "operator-",
    )
    assert post(viewer, f"/alerts/mutes/{mute.pk}/delete/").status_code == 403
    post(operator, f"/alerts/mutes/{mute.pk}/delete/")
    assert not Mute.objects.exists()


def test_a_mute_until_is_read_in_the_zone_the_form_was_filled_in(operator):
    """The form shows the browser's zone under it: 10:00 typed in Kolkata is 04:30 UTC."""
    day = (timezone.now() + timedelta(days=2)).date().isoformat()  # mutes last 7 days at most
    form = {"queue": "orders.dlq", "until": f"{day}T10:00", "reason": "deploy"}
    post(operator, "/alerts/mutes/add/", {**form, "tz": "Asia/Kolkata"})
    assert Mute.objects.get().until.isoformat() == f"{day}T04:30:00+00:00"

    Mute.objects.all().delete()
    post(operator, "/alerts/mutes/add/", form)  # no zone (no script): UTC, as the hint says
    assert Mute.objects.get().until.isoformat() == f"{day}T10:00:00+00:00"

    Mute.objects.all().delete()
    refused = post(operator, "/alerts/mutes/add/", {**form, "tz": "Mars/Olympus"})
    assert refused.status_code == 400
    assert b"tz: " in refused.content and b"IANA time zone" in refused.content
    assert not Mute.objects.exists()


# --- layout -------------------------------------------------------------------------


def test_login_lands_on_the_overview(db):
    user = make_user("viewer", password="a-long-test-password")
    client = Client()
    login = client.get("/login/")
    assert "dlq/console.css" in body(login) and "/static/django_htmx/htmx" in body(login)

    response = client.post(
        "/login/", {"username": user.username, "password": "a-long-test-password"}, follow=True
    )

    assert response.redirect_chain[-1][0] == "/"
    page = body(response)
    assert "<h1>Overview</h1>" in page and user.username in page and "viewer" in page
    assert 'hx-headers=\'{"X-CSRFToken": "' in page
