"""A real HTTP server on 127.0.0.1 that stands in for Slack, Telegram and webhooks.

It records every request (method, path, headers, body, when) and answers from a script:
`recorder.reply(429, headers={"Retry-After": "1"})` queues one answer; when the script is
empty it answers `recorder.default` (200, like Slack's "ok").
"""

import ipaddress
import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict
    body: bytes
    at: float  # time.monotonic()

    def json(self):
        return json.loads(self.body)


@dataclass
class Answer:
    status: int = 200
    body: bytes = b"ok"
    headers: dict | None = None


class Recorder:
    def __init__(self):
        self.requests: list[Recorded] = []
        self.script: deque[Answer] = deque()
        self.default = Answer()
        self.lock = threading.Condition()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def reply(self, status: int, body=b"", headers: dict | None = None, times: int = 1):
        body = json.dumps(body).encode() if isinstance(body, dict) else body
        for _ in range(times):
            self.script.append(Answer(status, body, headers))

    def wait_for(self, count: int, timeout: float = 10.0) -> list[Recorded]:
        with self.lock:
            self.lock.wait_for(lambda: len(self.requests) >= count, timeout)
            return list(self.requests)

    def _record(self, request: Recorded) -> Answer:
        with self.lock:
            self.requests.append(request)
            self.lock.notify_all()
            return self.script.popleft() if self.script else self.default

    def _handler(self):
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                request = Recorded("POST", self.path, dict(self.headers), body, time.monotonic())
                answer = recorder._record(request)
                self.send_response(answer.status)
                for name, value in (answer.headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            def log_message(self, *args):
                pass  # keep test output clean

        return Handler


@pytest.fixture
def recorder(settings, monkeypatch):
    """The stand-in listens on loopback, which alert destinations may reach only when the
    deployment allows it (DLQ_ALERT_ALLOWED_NETS): here, and in the processes tests start."""
    settings.DLQ_ALERT_ALLOWED_NETS = [ipaddress.ip_network("127.0.0.0/8")]
    monkeypatch.setenv("DLQ_ALERT_ALLOWED_NETS", "127.0.0.0/8")
    rec = Recorder()
    thread = threading.Thread(target=rec.server.serve_forever, daemon=True)
    thread.start()
    yield rec
    rec.server.shutdown()
    rec.server.server_close()
