import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dlq.models import AlertAttempt
from dlq.tasks.alerts import evaluate_alerts
from tests import ROOT
from tests.alertfactory import add_channel, arrive
from tests.drainproc import database_url

pytestmark = pytest.mark.django_db(transaction=True)


def start_worker(queue: str, log: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "CELERY_TASK_DEFAULT_QUEUE": queue,  # this test's own queue: no other worker takes it
        "DLQ_CONSOLE_URL": "https://console.example",
    }
    command = [sys.executable, "-m", "celery", "-A", "console", "worker", "--pool=solo"]
    command += ["--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "INFO"]
    with log.open("wb") as out:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def test_it_sends_an_alert_through_a_real_celery_worker(default_rule, endpoint, top, tmp_path):
    hook = add_channel("webhook", endpoint, url=f"{endpoint.url}/hook/worker-secret-0123456789")
    arrive("orders.dlq", 25)
    queue = top.celery_queue()
    worker = start_worker(queue, tmp_path / "worker.log")
    try:
        evaluate_alerts.apply_async(queue=queue)
        [request] = endpoint.wait_for(1, timeout=60)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not AlertAttempt.objects.filter(status="sent"):
            time.sleep(0.1)
    finally:
        worker.terminate()
        worker.wait(timeout=30)

    assert request.path == "/hook/worker-secret-0123456789"
    assert request.json()["count"] == 25
    assert request.json()["groups"][0]["url"].startswith("https://console.example/messages?")
    attempt = AlertAttempt.objects.get(channel=hook)
    assert (attempt.status, attempt.http_status, attempt.kind) == ("sent", 200, "new_group")
    log = (tmp_path / "worker.log").read_text()
    assert "dlq.tasks.send_alert" in log and "alert sent" in log
    assert "worker-secret" not in log
