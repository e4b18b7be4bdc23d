"""The first admin `make run` creates: a local account with a password shown once, unless
local passwords are off, when a password nobody could use would only mislead."""

import pytest
from django.contrib.auth import get_user_model

from dlq.management.firstrun import set_up

pytestmark = pytest.mark.django_db


def test_the_first_run_makes_an_admin_with_a_password_shown_once(monkeypatch):
    monkeypatch.delenv("DLQ_ADMIN_PASSWORD", raising=False)
    lines = set_up()
    admin = get_user_model().objects.get()
    assert admin.is_superuser and admin.username == "admin"
    assert "password '" in lines[0] and set_up() == []  # once


def test_with_local_passwords_off_no_password_admin_is_made(settings):
    settings.DLQ_LOCAL_LOGIN = False
    lines = set_up()
    assert not get_user_model().objects.exists()
    assert "Local passwords are off" in lines[0] and "password '" not in lines[0]
