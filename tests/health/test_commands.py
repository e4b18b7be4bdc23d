"""The commands containers run: dlq_setup before the web, dlq_health as health checks."""

import os
import time

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from dlq.drain.heartbeat import Heartbeat
from tests.drainproc import free_port

pytestmark = pytest.mark.django_db


def test_setup_creates_the_first_admin_once(capsys, monkeypatch):
    monkeypatch.delenv("DLQ_ADMIN_PASSWORD", raising=False)
    call_command("dlq_setup")
    first = capsys.readouterr().out
    assert "First admin created: user 'admin', password '" in first
    password = first.split("password '", 1)[1].split("'", 1)[0]
    assert User.objects.get(username="admin").check_password(password)

    call_command("dlq_setup")
    assert "First admin" not in capsys.readouterr().out


def test_health_ready_names_what_is_down(rabbit, settings, capsys):
    call_command("dlq_health", "ready")
    assert "ready: ok" in capsys.readouterr().out
    port = free_port()
    settings.DLQ_BROKER_URL = f"amqp://guest:guest@127.0.0.1:{port}/%2F"
    with pytest.raises(CommandError, match=rf"ready: broker unreachable \(127.0.0.1:{port} "):
        call_command("dlq_health", "ready")


def test_health_drainer_needs_a_fresh_heartbeat_from_this_host():
    with pytest.raises(CommandError, match="no heartbeat from a drainer"):
        call_command("dlq_health", "drainer")
    Heartbeat(f"dlq-drain test pid {os.getpid()}").write()
    call_command("dlq_health", "drainer")


def test_health_beat_needs_a_recently_saved_schedule(tmp_path):
    schedule = tmp_path / "celerybeat-schedule"
    with pytest.raises(CommandError, match="no schedule file"):
        call_command("dlq_health", "beat", "--schedule", str(schedule))
    schedule.write_bytes(b"")
    call_command("dlq_health", "beat", "--schedule", str(schedule))
    old = time.time() - 3600
    os.utime(schedule, (old, old))
    with pytest.raises(CommandError, match="schedule not saved for"):
        call_command("dlq_health", "beat", "--schedule", str(schedule))


def test_health_web_fails_when_nothing_listens():
    with pytest.raises(CommandError, match="/healthz unreachable"):
        call_command("dlq_health", "web", "--port", str(free_port()))
