from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied
from django.core.management import CommandError, call_command

from dlq.alerts import channels
from dlq.models import AlertAttempt, AlertChannel

pytestmark = pytest.mark.django_db

SLACK_SECRET = "T0AAA/B0BBB/xoxSecretWebhookToken42"
BOT_TOKEN = "123456789:AAHsecretBotTokenValue-_42"


def dlq_channel(*args) -> str:
    out = StringIO()
    call_command("dlq_channel", *args, stdout=out)
    return out.getvalue()


def user_with(role: str) -> User:
    user, _ = User.objects.get_or_create(username=f"{role}-user")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def test_it_adds_lists_and_removes_channels(endpoint):
    out = dlq_channel("add", "slack", f"https://hooks.slack.com/services/{SLACK_SECRET}")
    assert out.startswith("added slack channel slack (https://hooks.slack.com/…en42)")
    dlq_channel("add", "telegram", BOT_TOKEN, "-1001234567890", "--name", "oncall")
    dlq_channel("add", "webhook", f"{endpoint.url}/pager?key=abcdefgh12345678")
    dlq_channel("add", "slack", f"https://hooks.slack.com/services/{SLACK_SECRET}2")

    listed = dlq_channel("list")

    assert [line.split("\t")[:2] for line in listed.splitlines()] == [
        ["oncall", "telegram"],
        ["slack", "slack"],
        ["slack-2", "slack"],
        ["webhook", "webhook"],
    ]
    assert "bot …-_42 chat -1001234567890" in listed
    for secret in (SLACK_SECRET, BOT_TOKEN, BOT_TOKEN.split(":")[1], "abcdefgh12345678"):
        assert secret not in listed
    dlq_channel("remove", "slack-2")
    assert not AlertChannel.objects.filter(name="slack-2").exists()


def test_it_sends_a_test_alert(endpoint):
    dlq_channel("add", "webhook", f"{endpoint.url}/hook", "--name", "ops")

    out = dlq_channel("test", "ops")

    assert out.strip() == "test alert sent to ops (HTTP 200)"
    [request] = endpoint.requests
    assert request.path == "/hook"
    assert request.headers["Content-Type"] == "application/json"
    assert request.json()["kind"] == "test"
    attempt = AlertAttempt.objects.get()
    assert (attempt.kind, attempt.status, attempt.channel_name) == ("test", "sent", "ops")


def test_it_reports_a_test_alert_that_failed(endpoint):
    dlq_channel("add", "slack", f"{endpoint.url}/services/{SLACK_SECRET}", "--name", "team")
    endpoint.reply(404, b"no_service")

    with pytest.raises(CommandError) as failure:
        dlq_channel("test", "team")

    assert "rejected" in str(failure.value) and "gone" in str(failure.value)
    assert "no_service" not in str(failure.value)  # what answered is never shown
    assert SLACK_SECRET not in str(failure.value)
    assert "disabled: " in dlq_channel("list")


def test_it_refuses_bad_input_without_repeating_it():
    with pytest.raises(CommandError) as failure:
        dlq_channel("add", "slack", "hooks.slack.com/services/secret-value")
    assert "secret-value" not in str(failure.value)
    with pytest.raises(CommandError):
        dlq_channel("add", "telegram", "not-a-token", "-100")
    with pytest.raises(CommandError, match="no alert channel named 'nope'"):
        dlq_channel("test", "nope")


def test_it_refuses_a_duplicate_name(endpoint):
    dlq_channel("add", "webhook", f"{endpoint.url}/a", "--name", "ops")
    with pytest.raises(CommandError, match="exists already"):
        dlq_channel("add", "webhook", f"{endpoint.url}/b", "--name", "ops")


def test_it_lets_only_admins_change_channels(endpoint):
    hook = channels.create_channel("webhook", "ops", url=f"{endpoint.url}/hook/secret-part")
    actions = [
        lambda actor: channels.create_channel("webhook", url=f"{endpoint.url}/x", actor=actor),
        lambda actor: channels.update_channel(hook, name="mine", actor=actor),
        lambda actor: channels.set_enabled(hook, False, actor=actor),
        lambda actor: channels.send_test(hook, actor=actor),
        lambda actor: channels.delete_channel(hook, actor=actor),
    ]
    for role in ("viewer", "operator"):
        for action in actions:
            with pytest.raises(PermissionDenied):
                action(user_with(role))
    assert endpoint.requests == []
    admin = user_with("admin")
    channels.update_channel(hook, name="ops-2", actor=admin)
    channels.set_enabled(hook, False, actor=admin, reason="maintenance")
    hook.refresh_from_db()
    assert (hook.name, hook.enabled, hook.disabled_reason) == ("ops-2", False, "maintenance")


def test_it_never_shows_a_secret_once_saved(endpoint):
    hook = channels.create_channel("slack", url=f"https://hooks.slack.com/services/{SLACK_SECRET}")
    bot = channels.create_channel("telegram", token=BOT_TOKEN, chat_id="@alerts_chan")
    shown = repr([channels.list_channels(), str(hook), repr(hook), str(bot), repr(bot)])
    assert SLACK_SECRET not in shown and BOT_TOKEN.split(":")[1] not in shown
    assert "@alerts_chan" in shown


def test_it_keeps_a_secret_when_an_edit_leaves_it_empty():
    hook = channels.create_channel("slack", url=f"https://hooks.slack.com/services/{SLACK_SECRET}")
    channels.update_channel(hook, name="renamed", url="")
    hook.refresh_from_db()
    assert hook.config["url"].endswith(SLACK_SECRET)
    channels.update_channel(hook, url="https://hooks.slack.com/services/new")
    hook.refresh_from_db()
    assert hook.config == {"url": "https://hooks.slack.com/services/new"}
