"""`python manage.py dlq_health CHECK`: container health checks; exit 0 healthy, 1 not.

web: /healthz answers on this host. ready: the database and the broker are reachable.
drainer: a drainer on this host reported within DLQ_DRAINER_STALE_SECONDS.
beat: Celery beat's schedule file was written recently (beat saves it every 3 minutes).
"""

import socket
import time
import urllib.request
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from dlq.health import probes
from dlq.models.health import DrainerHeartbeat

BEAT_SCHEDULE = settings.BASE_DIR / "var" / "celerybeat-schedule"
BEAT_MAX_AGE_S = 300


class Command(BaseCommand):
    help = "Exit 0 if a part of the console is healthy: web, ready, drainer or beat."

    def add_arguments(self, parser):
        parser.add_argument("check", choices=["web", "ready", "drainer", "beat"])
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--schedule", default=str(BEAT_SCHEDULE))

    def handle(self, *args, check, port=8000, schedule="", **options):
        problem = {
            "web": lambda: _web(port),
            "ready": _ready,
            "drainer": _drainer,
            "beat": lambda: _beat(Path(schedule)),
        }[check]()
        if problem:
            raise CommandError(f"{check}: {problem}")
        self.stdout.write(f"{check}: ok")


def _web(port: int) -> str:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
            return "" if r.status == 200 else f"/healthz answered {r.status}"
    except OSError as e:
        return f"/healthz unreachable: {e}"


def _ready() -> str:
    checks = {"database": probes.check_database(), "broker": probes.check_broker()}
    return "; ".join(f"{k} {v}" for k, v in checks.items() if v != "ok")


def _drainer() -> str:
    since = timezone.now() - timedelta(seconds=settings.DLQ_DRAINER_STALE_SECONDS)
    alive = DrainerHeartbeat.objects.filter(
        host=socket.gethostname(), stopped_at__isnull=True, last_seen_at__gte=since
    )
    return "" if alive.exists() else f"no heartbeat from a drainer on {socket.gethostname()}"


def _beat(schedule: Path) -> str:
    candidates = [p for p in schedule.parent.glob(schedule.name + "*") if p.is_file()]
    if not candidates:
        return f"no schedule file at {schedule}"
    age = time.time() - max(p.stat().st_mtime for p in candidates)
    return "" if age <= BEAT_MAX_AGE_S else f"schedule not saved for {int(age)} s"
