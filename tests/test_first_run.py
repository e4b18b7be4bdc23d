"""The README's run command, as a new user meets it: `manage.py dlq_up` (what `make run` runs
after setting up the venv) on a fresh SQLite database migrates, creates the first admin,
prints the URL and the credentials, serves the console, stays quiet until something happens,
and stops every process on Ctrl-C."""

import http.cookiejar
import os
import re
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests import ROOT
from tests.drainproc import free_port

pytestmark = pytest.mark.slow


def _wait_for_output(proc, log: Path, pattern: str, timeout: float) -> re.Match:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, log.read_text(errors="replace"))
        if found:
            return found
        assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
        time.sleep(0.2)
    raise AssertionError(f"no {pattern!r} in:\n{log.read_text(errors='replace')[-3000:]}")


def _sign_in(port: int, username: str, password: str) -> str:
    """The page a browser lands on after signing in with these credentials."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    login = f"http://127.0.0.1:{port}/login/"
    opener.open(login, timeout=10).read()
    token = next(c.value for c in jar if c.name == "csrftoken")
    form = urllib.parse.urlencode(
        {"username": username, "password": password, "csrfmiddlewaretoken": token}
    ).encode()
    request = urllib.request.Request(login, data=form, headers={"Referer": login})
    with opener.open(request, timeout=30) as response:
        return response.read().decode(errors="replace")


def test_the_run_command_brings_the_console_up_and_down(rabbit, tmp_path, unique):
    port = free_port()
    log = tmp_path / "up.log"
    env = {
        **os.environ,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'first.sqlite3'}",
        "DLQ_QUEUES": f"{unique}.dlq",  # nothing of other tests' queues
        "CELERY_TASK_DEFAULT_QUEUE": f"{unique}.celery",
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("DLQ_ADMIN_PASSWORD", None)
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "manage.py", "dlq_up", "--port", str(port), "--no-demo"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
    try:
        _wait_for_output(proc, log, rf"running at http://localhost:{port}/", 120)
        password = _wait_for_output(proc, log, r"user 'admin', password '([^']+)'", 5)[1]
        # The banner says what DLQ_QUEUES resolved to: here nothing yet.
        _wait_for_output(proc, log, rf"DLQ_QUEUES = {unique}\.dlq \(the queues the console", 5)
        _wait_for_output(proc, log, r"no queue matches yet", 5)
        _wait_for_output(proc, log, r"Press Ctrl-C to stop\.", 5)
        banner_at = time.monotonic()
        # Its drainer drains the broker of DLQ_BROKER_URL (the `rabbit` fixture's).
        amqp_port = urllib.parse.urlsplit(rabbit.url).port
        _wait_for_output(proc, log, rf"connected[^\n]*:{amqp_port}\b", 60)

        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=5) as r:
                    assert r.status == 200 and b"password" in r.read().lower()
                    break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.5)
        assert "Overview" in _sign_in(port, "admin", password)
        # Quiet until something happens: beat ticks every 5 s (index-search), the worker
        # runs each task; none of that, nor Celery's banners, shows after the banner.
        time.sleep(max(0.0, banner_at + 12 - time.monotonic()))
        after = log.read_text(errors="replace").split("Press Ctrl-C to stop.", 1)[1]
        routine = [line for line in after.splitlines() if re.search(
            r"logger=celery|Sending due task|succeeded in|celery@|-------------- |GET /", line
        )]  # fmt: skip
        assert routine == [], after[-3000:]
        assert proc.poll() is None, after[-3000:]  # every process still up (dlq_up supervises)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
        code = proc.wait(timeout=60)
    text = log.read_text(errors="replace")
    assert code == 0, text[-3000:]
    # Every process it started is gone with it (they run in sessions of their own).
    leftovers = subprocess.run(
        ["pgrep", "-f", f"runserver 0.0.0.0:{port}"], capture_output=True, text=True
    ).stdout.split()
    assert not leftovers, text[-3000:]
