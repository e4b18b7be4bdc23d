"""Mutes are operator actions like any other (security review finding 6): a reason is
required, the end is bounded (DLQ_MUTE_MAX_DAYS), and adding and removing one is audited."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from dlq.alerts import mutes
from dlq.models import AuditEntry, Mute
from tests.factories import client_for, make_user, post

pytestmark = pytest.mark.django_db


def local(at) -> str:
    return at.strftime("%Y-%m-%dT%H:%M")


@pytest.fixture
def operator():
    return client_for(make_user("operator"))


def test_a_mute_needs_a_reason(operator):
    until = local(timezone.now() + timedelta(hours=2))
    refused = post(operator, "/alerts/mutes/add/", {"queue": "*", "until": until, "reason": " "})
    assert refused.status_code == 400 and "This field is required" in refused.content.decode()
    with pytest.raises(ValidationError, match="a reason is required"):
        mutes.mute(until=timezone.now() + timedelta(hours=1), queue="*", reason="  ")
    assert not Mute.objects.exists() and not AuditEntry.objects.exists()


def test_a_mute_ends_within_the_configured_bound(operator, settings):
    settings.DLQ_MUTE_MAX_DAYS = 7
    far = {"queue": "*", "until": "9999-12-31T23:59", "reason": "quiet please"}
    refused = post(operator, "/alerts/mutes/add/", far)
    assert refused.status_code == 400
    assert "at most 7 days ahead" in refused.content.decode()
    with pytest.raises(ValidationError, match="at most 7 days ahead"):
        mutes.mute(until=timezone.now() + timedelta(days=8), queue="*", reason="r")
    week = {**far, "until": local(timezone.now() + timedelta(days=6))}
    assert post(operator, "/alerts/mutes/add/", week).status_code == 302
    assert Mute.objects.count() == 1


def test_adding_and_removing_a_mute_is_audited(operator):
    until = timezone.now() + timedelta(hours=2)
    form = {"queue": "orders.*", "until": local(until), "reason": "deploy 4711"}
    assert post(operator, "/alerts/mutes/add/", form).status_code == 302
    made = Mute.objects.get()
    added = AuditEntry.objects.get(action="mute_add")
    assert added.reason == "deploy 4711" and added.actor_name.startswith("operator-")
    assert '"queue": "orders.*"' in added.detail

    assert post(operator, f"/alerts/mutes/{made.pk}/delete/").status_code == 302
    removed = AuditEntry.objects.get(action="mute_remove")
    assert f'"mute_id": {made.pk}' in removed.detail
    assert not Mute.objects.exists()
    assert post(operator, f"/alerts/mutes/{made.pk}/delete/").status_code == 404


def test_a_long_vhost_and_queue_pattern_can_be_muted(operator):
    pattern = f"{'v' * 255}/{'q' * 250}*"
    until = local(timezone.now() + timedelta(hours=2))
    added = post(operator, "/alerts/mutes/add/", {"queue": pattern, "until": until,
                                                  "reason": "a service's long names"})  # fmt: skip
    assert added.status_code == 302 and Mute.objects.get().queue == pattern
