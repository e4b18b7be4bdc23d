"""`make run`: migrate, first admin, demo data on an empty console, then every process.

Runs the web server, the drainer, a Celery worker and Celery beat in the foreground and
stops them all on Ctrl-C (or when one of them dies, so a broken set-up is never half up).
"""

import contextlib
import logging
import os
import signal
import socket
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from dlq.broker import amqp
from dlq.management import demo_alert
from dlq.management.firstrun import drained_lines, set_up
from dlq.models import Message

DEMO_ALERT_WAIT = 120  # seconds the drainer has to store the demo's messages


def processes(port: int) -> dict[str, list[str]]:
    """Each process says only what an operator wants to see (console/settings.py, LOGGING):
    Celery without its banners, the web server without its start-up text (its requests
    and errors are logged)."""
    py = sys.executable
    celery = [py, "-m", "celery", "-A", "console"]
    if settings.LOG_LEVEL != "DEBUG":
        celery.append("--quiet")
    level = settings.LOG_LEVEL.lower()
    return {
        "web": [py, "manage.py", "runserver", f"0.0.0.0:{port}", "--noreload"],
        "drainer": [py, "manage.py", "drain"],
        "worker": [*celery, "worker", "-l", level, "-c", "2"],
        "beat": [*celery, "beat", "-l", level,
                 "-s", str(settings.BASE_DIR / "var" / "celerybeat-schedule")],
    }  # fmt: skip


class Command(BaseCommand):
    help = "Set up and run the whole console (web, drainer, worker, beat) until Ctrl-C."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-demo", action="store_true", help="skip the demo data")

    def handle(self, *args, port=8000, no_demo=False, **options):
        notes = set_up()
        self.demo_alert_by, self.demo_seen = None, 0
        if not no_demo and not Message.objects.exists() and self._demo():
            self.demo_alert_by = time.monotonic() + DEMO_ALERT_WAIT
        notes += drained_lines()  # resolved before the drainer starts: what it will drain
        # Before the children start: Ctrl-C at any moment from here stops them all.
        self.stopping: list[bool] = []
        signal.signal(signal.SIGINT, lambda *_: self.stopping.append(True))
        signal.signal(signal.SIGTERM, lambda *_: self.stopping.append(True))
        children = self._start(processes(port))
        if self._wait_until_up(port, children):
            self.stdout.write(f"\nDLQ Console is running at http://localhost:{port}/")
            for line in notes:
                self.stdout.write(line)
            self.stdout.write("Press Ctrl-C to stop.\n")
        code = self._supervise(children)
        raise SystemExit(code)

    def _demo(self) -> bool:
        try:
            call_command("dlq_demo")
        except Exception as e:  # the console is still useful without demo data
            self.stderr.write(f"demo data skipped: {e}")
            return False
        return True

    def _leave_demo_alert(self) -> None:
        """The demo's sent alert (dlq/management/demo_alert.py), once the drainer has stored
        the demo's messages: when their count has stopped growing for a turn."""
        if self.demo_alert_by is None:
            return
        try:
            stored = Message.objects.count()
            settled, self.demo_seen = stored and stored == self.demo_seen, stored
            if settled and demo_alert.leave_alert() is not None:
                self.demo_alert_by = None
        except Exception as e:  # the console is still useful without it
            self.stderr.write(f"demo alert skipped: {e}")
            self.demo_alert_by = None
        if self.demo_alert_by is not None and time.monotonic() > self.demo_alert_by:
            self.demo_alert_by = None  # the drainer stored nothing: nothing to alert about

    def _start(self, commands):
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        quiet = settings.LOG_LEVEL != "DEBUG"
        return {
            name: subprocess.Popen(
                cmd,
                cwd=settings.BASE_DIR,
                env=env,
                start_new_session=True,
                # runserver's start-up text goes to stdout; its log lines to stderr
                stdout=subprocess.DEVNULL if quiet and name == "web" else None,
            )
            for name, cmd in commands.items()
        }

    def _wait_until_up(self, port: int, children, timeout: float = 60) -> bool:
        """The banner comes last: once the web server answers and the worker consumes its
        queue (its "ready" line is out), so the URL and the password do not scroll away.
        False when a process died or Ctrl-C came first (_supervise then stops the rest)."""
        deadline = time.monotonic() + timeout
        while not self.stopping and all(p.poll() is None for p in children.values()):
            if time.monotonic() > deadline or (_answers(port) and _worker_consumes()):
                return True
            time.sleep(0.3)
        return False

    def _supervise(self, children) -> int:
        code = 0
        while not self.stopping:
            dead = {n: p.returncode for n, p in children.items() if p.poll() is not None}
            if dead:
                self.stderr.write(f"stopping everything: {dead} exited")
                code = 1
                break
            self._leave_demo_alert()
            time.sleep(0.5)
        for proc in children.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        for proc in children.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        return code


def _answers(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
        return True
    return False


def _worker_consumes() -> bool:
    """A worker consumes the Celery queue (on Celery's own broker URL; Redis: not asked)."""
    url = settings.CELERY_BROKER_URL
    if not url.startswith("amqp"):
        return True
    try:
        conn = amqp.connect(url.replace(";", ","), "dlq-up")
    except (ConnectionError, ValueError, *amqp.AllErrors):
        return False
    # Until the worker declares its queue the passive declare fails, and pika says so at
    # WARNING on each try: expected here, so not on the operator's screen.
    pika_channel = logging.getLogger("pika.channel")
    level = pika_channel.level
    pika_channel.setLevel(logging.ERROR)
    try:
        queue = settings.CELERY_TASK_DEFAULT_QUEUE
        return conn.channel().queue_declare(queue, passive=True).method.consumer_count > 0
    except amqp.AllErrors:  # not declared yet: the worker has not started consuming
        return False
    finally:
        pika_channel.setLevel(level)
        with contextlib.suppress(*amqp.AllErrors):
            conn.close()
