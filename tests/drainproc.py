"""Helpers for the drainer resilience tests: real subprocesses, real broker, real databases.

Every drainer here is `manage.py drain --queues ...` started by the test itself; the tests
only signal the process ids they started.
"""

import base64
import collections
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pika

from dlq.broker import amqp
from tests import ROOT

PYTHON = str(ROOT / ".venv" / "bin" / "python") if (ROOT / ".venv").exists() else sys.executable


# --- databases ----------------------------------------------------------------------------


def database_url(settings_dict: dict | None = None) -> str:
    """A DATABASE_URL for the database the tests use (pytest-django's test database)."""
    if settings_dict is None:
        from django.db import connection

        settings_dict = connection.settings_dict
    if settings_dict["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{settings_dict['NAME']}"
    user = urllib.parse.quote(settings_dict.get("USER") or "", safe="")
    password = settings_dict.get("PASSWORD") or ""
    creds = f"{user}:{urllib.parse.quote(password, safe='')}" if password else user
    host = settings_dict.get("HOST") or "127.0.0.1"
    port = settings_dict.get("PORT") or 5432
    return f"postgres://{creds}@{host}:{port}/{settings_dict['NAME']}"


def manage(db_url: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`manage.py ARGS` in a process of its own, on the database at `db_url`."""
    full_env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "DJANGO_SETTINGS_MODULE": "console.settings",
        **(env or {}),
    }
    return subprocess.run(
        [PYTHON, "manage.py", *args],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def stored_bodies(queue: str) -> collections.Counter:
    """How many rows hold each body, in the Django test database."""
    from dlq.models import Message

    return collections.Counter(
        bytes(b) for b in Message.objects.filter(queue=queue).values_list("body", flat=True)
    )


def body_counts(messages) -> collections.Counter:
    """How many of the published (body, headers) pairs carry each body."""
    return collections.Counter(body for body, _ in messages)


def fingerprints(queue: str) -> int:
    """Distinct fingerprints stored for a queue: far fewer than rows when twins abound."""
    from dlq.models import Message

    return Message.objects.filter(queue=queue).values("fingerprint").distinct().count()


def death_seconds(queue: str) -> int:
    """Distinct death times (1 s resolution) among a queue's rows."""
    from dlq.models import Message

    return Message.objects.filter(queue=queue).values("first_death_at").distinct().count()


def row_count(queue: str) -> int:
    from dlq.models import Message

    return Message.objects.filter(queue=queue).count()


def pending_batches() -> int:
    from dlq.models import PendingBatch

    return PendingBatch.objects.count()


def pending_summary() -> str:
    """The pending batches left behind and how many rows each still holds (for failures)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT p.id, p.drainer, p.created_at, count(m.id) FROM dlq_pendingbatch p"
            " LEFT JOIN dlq_message m ON m.drain_batch = p.id GROUP BY 1, 2, 3 ORDER BY 3"
        )
        return "pending batches left: " + repr(cursor.fetchall())


# --- the broker ---------------------------------------------------------------------------


class Broker:
    """A test's own connection for declaring, publishing and counting, on the broker the
    test runs on (the `rabbit` fixture sets DLQ_BROKER_URL)."""

    def __init__(self):
        from django.conf import settings

        self.conn = amqp.connect(settings.DLQ_BROKER_URL, "dlq-tests-drainproc")
        self.ch = self.conn.channel()
        self.queues: list[str] = []
        self.exchanges: list[str] = []

    def close(self):
        with contextlib.suppress(amqp.AllErrors):
            if not self.ch.is_open:
                self.ch = self.conn.channel()
            for name in self.queues:
                self.ch.queue_delete(name)
            for name in self.exchanges:
                self.ch.exchange_delete(name)
        with contextlib.suppress(amqp.AllErrors):
            self.conn.close()

    def declare(self, name: str, arguments: dict | None = None) -> str:
        self.ch.queue_declare(name, durable=True, arguments=arguments)
        self.queues.append(name)
        return name

    def backlog(self, unique: str, messages) -> str:
        """`<unique>.dlq`, declared and holding `messages` ((body, headers) pairs): its name."""
        parking = self.declare(f"{unique}.dlq")
        self.publish_many(parking, messages)
        self.wait_depth(parking, len(messages))
        return parking

    def depth(self, name: str) -> int:
        """Ready messages (exact when no consumer holds any unacked)."""
        return self.ch.queue_declare(name, passive=True).method.message_count

    def parking_with_dlx(self, unique: str) -> tuple[str, str]:
        """An inbox with x-message-ttl=0 whose dead letters go to a parking queue.

        Everything published to the inbox expires at once and arrives in the parking queue
        with a real x-death (reason expired, time to the second).
        """
        dlx = f"{unique}.dlx"
        self.ch.exchange_declare(dlx, "fanout", durable=True)
        self.exchanges.append(dlx)
        parking = self.declare(f"{unique}.dlq")
        self.ch.queue_bind(parking, dlx)
        inbox = self.declare(f"{unique}.in", {"x-message-ttl": 0, "x-dead-letter-exchange": dlx})
        return inbox, parking

    def publish_many(self, routing_key: str, messages, exchange: str = "") -> int:
        """Publish (body, headers) pairs with persistent delivery; returns how many."""
        n = 0
        for body, headers in messages:
            props = pika.BasicProperties(
                delivery_mode=2, content_type="application/json", headers=headers
            )
            self.ch.basic_publish(exchange, routing_key, body, props)
            n += 1
            if n % 2000 == 0:
                self.conn.process_data_events(0)
        return n

    def wait_depth(self, name: str, expected: int, timeout: float = 60) -> None:
        wait_for(lambda: self.depth(name) >= expected, timeout, f"{name} to hold {expected}")
        assert self.depth(name) == expected


def twins(total: int, distinct: int, tag: str = "") -> list[tuple[bytes, dict]]:
    """`total` messages with only `distinct` different (body, headers) pairs: byte twins."""
    out = []
    for i in range(total):
        k = i % distinct
        body = json.dumps({"order": k, "tag": tag, "pad": "x" * (k % 50)}).encode()
        out.append((body, {"tenant": f"t{k % 7}", "attempt": k % 3}))
    return out


# --- the management API -------------------------------------------------------------------


def management(method: str, path: str, body: dict | None = None):
    """A management API call on the broker the test runs on."""
    from django.conf import settings

    parts = urllib.parse.urlsplit(settings.DLQ_MANAGEMENT_URL)
    url = f"{parts.scheme}://{parts.hostname}:{parts.port or 15672}{path}"
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, method=method, data=data)
    request.add_header("Content-Type", "application/json")
    creds = f"{parts.username or 'guest'}:{parts.password or 'guest'}".encode()
    request.add_header("Authorization", "Basic " + base64.b64encode(creds).decode())
    with urllib.request.urlopen(request, timeout=10) as response:
        data = response.read()
    return json.loads(data) if data else None


def drainer_connections(pid: int) -> list[str]:
    """Management names of the broker connections opened by drainer process `pid`."""
    found = []
    for conn in management("GET", "/api/connections?columns=name,client_properties") or []:
        props = conn.get("client_properties") or {}
        name = props.get("connection_name") or ""
        if name.startswith("dlq-drain") and name.endswith(f" pid {pid}"):
            found.append(conn["name"])
    return found


def connection_info(name: str) -> dict:
    return management("GET", f"/api/connections/{urllib.parse.quote(name, safe='')}")


def close_connection(name: str) -> None:
    management("DELETE", f"/api/connections/{urllib.parse.quote(name, safe='')}")


# --- processes ----------------------------------------------------------------------------


def wait_for(predicate, timeout: float, what: str, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def wait_rows(queue: str, n: int, timeout: float, what: str, interval: float = 0.1) -> None:
    """Wait for at least `n` rows of `queue` in the test database."""
    wait_for(lambda: row_count(queue) >= n, timeout, what, interval)


_EVENT = re.compile(r'event=(?:"((?:[^"\\]|\\.)*)"|(\S+))')


class DrainProcess:
    """`manage.py drain` as a subprocess, its log in a temp file."""

    def __init__(self, queues: list[str], db_url: str, once=False, env=None, name="drain"):
        from django.conf import settings

        self.log_path = Path(tempfile.mkstemp(prefix=f"dlq-{name}-", suffix=".log")[1])
        full_env = {
            **os.environ,
            "DATABASE_URL": db_url,
            "DLQ_BROKER_URL": settings.DLQ_BROKER_URL,  # the `rabbit` fixture's
            "DLQ_LOG_LEVEL": "INFO",
            "DLQ_LOG_JSON": "false",
            "PYTHONUNBUFFERED": "1",
            "DJANGO_SETTINGS_MODULE": "console.settings",
        }
        full_env.update(env or {})
        args = [PYTHON, "manage.py", "drain", "--queues", ",".join(queues)]
        if once:
            args.append("--once")
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in wait/cleanup
        self.proc = subprocess.Popen(
            args, cwd=ROOT, env=full_env, stdout=self._log, stderr=subprocess.STDOUT
        )
        self.pid = self.proc.pid
        self.peak_rss_kib = 0
        self.log_text = ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, sig: int) -> None:
        if self.alive():
            os.kill(self.pid, sig)

    def kill(self) -> int:
        self.send(signal.SIGKILL)
        return self.wait(10)

    def wait(self, timeout: float = 60) -> int:
        code = self.proc.wait(timeout)
        self._log.close()
        return code

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        self.send(sig)
        return self.wait(timeout)

    def log(self) -> str:
        if self.log_path.exists():
            return self.log_path.read_text(errors="replace")
        return self.log_text

    def events(self, event: str, prefix: bool = False) -> list[str]:
        """Log lines whose event is `event` (or starts with it, with prefix=True)."""
        found = []
        for line in self.log().splitlines():
            match = _EVENT.search(line)
            name = (match.group(1) or match.group(2) or "") if match else None
            if name is not None and (name.startswith(event) if prefix else name == event):
                found.append(line)
        return found

    def status(self, field: str) -> int:
        """A /proc/PID/status figure in KiB (VmRSS, VmHWM), 0 once the process is gone."""
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0

    def sample_rss(self) -> int:
        self.peak_rss_kib = max(self.peak_rss_kib, self.status("VmRSS"), self.status("VmHWM"))
        return self.peak_rss_kib

    def cleanup(self) -> None:
        if self.alive():
            os.kill(self.pid, signal.SIGUSR1)  # its threads' stacks, for a failed test's log
            time.sleep(0.5)
            os.kill(self.pid, signal.SIGKILL)
            self.proc.wait(10)
        self._log.close()
        self.log_text = self.log()
        # Shown by pytest only when the test fails.
        tail = self.log_text.splitlines()[-80:]
        print(f"--- drainer pid {self.pid} ({self.proc.returncode}), last log lines ---")
        print("\n".join(tail))
        if not os.environ.get("DLQ_TEST_KEEP_LOGS"):
            self.log_path.unlink(missing_ok=True)
        else:
            print(f"log kept: {self.log_path}")


def run_once(queues: list[str], db_url: str, env=None, timeout: float = 120) -> DrainProcess:
    """`drain --once` to completion; returns the finished process (check .proc.returncode)."""
    proc = DrainProcess(queues, db_url, once=True, env=env, name="once")
    try:
        proc.wait(timeout)
    finally:
        proc.cleanup()  # kills it if it overran; keeps its log in log_text
    return proc


# --- a throwaway PostgreSQL ---------------------------------------------------------------

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ScratchPostgres:
    """A PostgreSQL 15 of the test's own (initdb into a temp dir, trust auth, user root).

    It can be stopped and started at will; the machine's main PostgreSQL is never touched.
    Tests run as root and PostgreSQL refuses to, so its commands run as the postgres user.
    """

    def __init__(self, port: int | None = None):
        import pwd
        import shutil

        self._rmtree = shutil.rmtree
        self.base = Path(tempfile.mkdtemp(prefix="dlq-scratch-pg-"))
        owner = pwd.getpwnam("postgres")
        os.chown(self.base, owner.pw_uid, owner.pw_gid)
        self.data = self.base / "data"
        self.port = port or free_port()
        self.url = f"postgres://root@127.0.0.1:{self.port}/dlq"
        self._as_postgres(
            PG_BIN / "initdb", "-D", self.data, "-A", "trust", "-U", "root", "--no-sync"
        )
        self.start()
        import psycopg

        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE dlq")

    def _as_postgres(self, *args, check=True):
        return subprocess.run(
            ["runuser", "-u", "postgres", "--", *map(str, args)],
            check=check,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def dsn(self, dbname: str = "dlq") -> str:
        return f"host=127.0.0.1 port={self.port} user=root dbname={dbname} connect_timeout=5"

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.base} -c listen_addresses=127.0.0.1 -c fsync=off"
            " -c full_page_writes=off"
        )
        self._as_postgres(
            PG_BIN / "pg_ctl", "-D", self.data, "-l", self.base / "log", "-o", options,
            "-w", "-t", "60", "start",
        )  # fmt: skip

    def stop(self, mode: str = "immediate") -> None:
        self._as_postgres(PG_BIN / "pg_ctl", "-D", self.data, "-m", mode, "-w", "stop")

    def migrate(self) -> None:
        done = manage(self.url, "migrate", "--noinput")
        assert done.returncode == 0, done.stdout + done.stderr

    def query(self, sql: str, params=()) -> list[tuple]:
        import psycopg

        with psycopg.connect(self.dsn(), autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()

    def destroy(self) -> None:
        self._as_postgres(
            PG_BIN / "pg_ctl", "-D", self.data, "-m", "immediate", "stop", check=False
        )
        self._rmtree(self.base, ignore_errors=True)
