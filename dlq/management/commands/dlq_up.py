"""`make run`: migrate, first admin, demo data on an empty console, then every process.

Runs the web server, the drainer, a Celery worker and Celery beat in the foreground and
stops them all on Ctrl-C (or when one of them dies, so a broken set-up is never half up).
"""

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand

from dlq.management.firstrun import set_up
from dlq.models import Message


def processes(port: int) -> dict[str, list[str]]:
    py = sys.executable
    return {
        "web": [py, "manage.py", "runserver", f"0.0.0.0:{port}", "--noreload"],
        "drainer": [py, "manage.py", "drain"],
        "worker": [py, "-m", "celery", "-A", "console", "worker", "-l", "info", "-c", "2"],
        "beat": [py, "-m", "celery", "-A", "console", "beat", "-l", "info",
                 "-s", str(settings.BASE_DIR / "var" / "celerybeat-schedule")],
    }  # fmt: skip


class Command(BaseCommand):
    help = "Set up and run the whole console (web, drainer, worker, beat) until Ctrl-C."

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--no-demo", action="store_true", help="skip the demo data")

    def handle(self, *args, port=8000, no_demo=False, **options):
        notes = set_up()
        if not no_demo and not Message.objects.exists():
            self._demo()
        children = self._start(processes(port))
        self.stdout.write(f"\nDLQ Console is running at http://localhost:{port}/")
        for line in notes:
            self.stdout.write(line)
        self.stdout.write("Press Ctrl-C to stop.\n")
        code = self._supervise(children)
        raise SystemExit(code)

    def _demo(self):
        try:
            call_command("dlq_demo")
        except Exception as e:  # the console is still useful without demo data
            self.stderr.write(f"demo data skipped: {e}")

    def _start(self, commands):
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        return {
            name: subprocess.Popen(cmd, cwd=settings.BASE_DIR, env=env, start_new_session=True)
            for name, cmd in commands.items()
        }

    def _supervise(self, children) -> int:
        stopping = []
        signal.signal(signal.SIGINT, lambda *_: stopping.append(True))
        signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
        code = 0
        while not stopping:
            dead = {n: p.returncode for n, p in children.items() if p.poll() is not None}
            if dead:
                self.stderr.write(f"stopping everything: {dead} exited")
                code = 1
                break
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
