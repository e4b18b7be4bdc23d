"""A real `celery -A console worker` for tests, in its own process group, on the test's
own Celery queue and the pytest database."""

import os
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager

from dlq.tasks import jobs as job_tasks
from tests import ROOT

# Celery's own transport: one broker for every test, so the test process and its worker
# meet whichever broker the test itself runs on.
CELERY_TRANSPORT = os.environ.get("CELERY_BROKER_URL") or "amqp://guest:guest@127.0.0.1:5672/%2F"

CELERY = [sys.executable, "-m", "celery", "-A", "console", "worker", "-l", "info", "-c", "1",
          "--without-gossip", "--without-mingle", "--without-heartbeat"]  # fmt: skip


class Worker:
    """`celery -A console worker` in its own process group, with its log in a file."""

    def __init__(self, queue: str, env: dict | None = None):
        from tests.drainproc import database_url  # not at the top: drainproc needs conftest

        self.log = tempfile.TemporaryFile("w+")  # closed by stop()  # noqa: SIM115
        env = {
            **os.environ,
            "DATABASE_URL": database_url(),  # the pytest database
            "CELERY_TASK_DEFAULT_QUEUE": queue,
            "DLQ_JOB_STALE_SECONDS": "3",
            **(env or {}),
        }
        self.proc = subprocess.Popen(
            [*CELERY, "-Q", queue, "-n", f"{queue}-{time.monotonic_ns()}@%h"],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read()

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while " ready." not in self.output():
            assert self.proc.poll() is None, f"the worker exited:\n{self.output()[-3000:]}"
            assert time.monotonic() < deadline, f"no ready worker:\n{self.output()[-3000:]}"
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL to the whole group: the worker and its pool process die at once."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


@contextmanager
def jobs_on_worker(top, monkeypatch):
    """A worker on the test's own Celery queue; pages hand their jobs to it exactly as
    job_tasks.start does, only on that queue."""
    queue = top.celery_queue()
    running = Worker(queue)
    try:
        running.wait_ready()
        monkeypatch.setattr(
            job_tasks, "start", lambda job: job_tasks.run_job.apply_async((job.pk,), queue=queue)
        )
        yield running
    finally:
        running.stop()
