"""Does anyone get paged? The overview says so plainly when no channel exists, every channel
is off, no rule is on, or a channel's last delivery failed (which, when, the error, escaped);
each channel row shows its last delivery and a failing channel is no green "enabled"."""

import pytest
from django.utils import timezone

from dlq.alerts import channels, engine
from dlq.models import AlertAttempt, AlertRule, AttemptStatus
from tests.factories import client_for, make_user
from tests.uiops import body

pytestmark = pytest.mark.django_db

HOSTILE_ERROR = "HTTP 500: <script>alert(1)</script>\u202e boom"


def attempt(channel, status: str, error: str = "", http_status=None) -> AlertAttempt:
    now = timezone.now()
    return AlertAttempt.objects.create(
        channel=channel, channel_name=channel.name, kind="digest", status=status, error=error,
        http_status=http_status, not_before=now, created_at=now, started_at=now, finished_at=now,
    )  # fmt: skip


def overview(role: str = "viewer") -> str:
    return body(client_for(make_user(role)).get("/"))


def test_a_fresh_install_says_nobody_is_paged_with_a_link_for_an_admin():
    engine.ensure_default_rule()  # a fresh install has an enabled rule and no channel
    assert AlertRule.objects.filter(enabled=True).exists()
    admin = overview("admin")
    assert "Nobody is paged: no alert channel is set up." in admin
    assert '<a href="/alerts/">Add a channel</a>' in admin
    viewer = overview("viewer")
    assert "Nobody is paged" in viewer and "Ask an admin to add one." in viewer


def test_every_channel_off_or_no_rule_on_is_said_too():
    engine.ensure_default_rule()
    hook = channels.create_channel("webhook", "ops", url="https://hooks.example/x")
    assert "Nobody is paged" not in overview()
    channels.set_enabled(hook, False)
    assert "Nobody is paged: every alert channel is disabled." in overview()
    channels.set_enabled(hook, True)
    AlertRule.objects.update(enabled=False)
    assert "Nobody is paged: no alert rule is enabled." in overview()


def test_a_channel_whose_last_delivery_failed_is_named_with_when_and_the_error():
    engine.ensure_default_rule()
    good = channels.create_channel("webhook", "fine-hook", url="https://hooks.example/a")
    bad = channels.create_channel("webhook", "<i>ops</i>-hook", url="https://hooks.example/b")
    attempt(good, AttemptStatus.FAILED, "timed out")
    attempt(good, AttemptStatus.SENT, http_status=200)  # failed, then went out: fine now
    attempt(bad, AttemptStatus.SENT, http_status=200)
    failed = attempt(bad, AttemptStatus.FAILED, HOSTILE_ERROR, 500)

    page = overview()
    assert "Alerts to &lt;i&gt;ops&lt;/i&gt;-hook are failing" in page
    assert "fine-hook are failing" not in page
    assert f'datetime="{failed.finished_at.isoformat()}"' in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    assert "\u202e" not in page  # |visible shows the bidi control, never applies it
    assert f'href="/alerts/attempts/?channel={bad.pk}"' in page


def test_a_rejected_channel_switched_off_is_still_named():
    engine.ensure_default_rule()
    keep = channels.create_channel("webhook", "other", url="https://hooks.example/a")
    revoked = channels.create_channel("slack", "team", url="https://hooks.slack.com/services/T/B/x")
    attempt(revoked, AttemptStatus.REJECTED, "HTTP 404: no_service", 404)
    channels.set_enabled(revoked, False, reason="switched off")
    attempt(keep, AttemptStatus.SENT, http_status=200)
    assert "Alerts to team are failing and the channel was switched off" in overview()
    channels.set_enabled(keep, False, reason="by an admin")  # an admin's own choice...
    attempt(keep, AttemptStatus.FAILED, "old failure")
    assert "Alerts to other are failing" not in overview()  # ...is no failure to report


def test_each_channel_row_shows_its_last_delivery_and_failing_is_not_green():
    hook = channels.create_channel("webhook", "ops-hook", url="https://hooks.example/a")
    quiet = channels.create_channel("webhook", "quiet", url="https://hooks.example/b")
    attempt(hook, AttemptStatus.SENT, http_status=200)
    attempt(hook, AttemptStatus.FAILED, HOSTILE_ERROR, 500)
    AlertAttempt.objects.create(channel=hook, channel_name=hook.name, kind="digest", try_no=2,
                                not_before=timezone.now(), created_at=timezone.now())  # fmt: skip

    page = body(client_for(make_user("viewer")).get("/alerts/"))
    row = page.split(f'id="channel-{hook.pk}"')[1].split("</tr>")[0]
    assert "enabled, failing" in row and "badge ok" not in row
    assert "badge-failed" in row and "HTTP 500" in row and "&lt;script&gt;" in row
    assert f'href="/alerts/attempts/?channel={hook.pk}"' in row
    other = page.split(f'id="channel-{quiet.pk}"')[1].split("</tr>")[0]
    assert "never tried" in other and "badge ok" in other
