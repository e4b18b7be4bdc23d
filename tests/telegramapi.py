"""A Telegram Bot API stand-in: a real HTTP server on 127.0.0.1 speaking the methods the
console calls (`POST /bot<TOKEN>/<method>` with a JSON body), recording every call.

getUpdates behaves as Telegram's: an `offset` confirms (forgets) every update below it, the
answer holds the updates from there, and with none it holds the request until one arrives
or `timeout` seconds pass (a real long poll). `conflict = True` answers it 409 as Telegram
does while a webhook is set. `hold("answerCallbackQuery")` keeps such calls waiting (after
recording them) until `release()`: a test can kill a worker in the middle of one."""

import itertools
import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

BOT_NAME = "dlq_test_bot"


@dataclass
class Called:
    token: str
    method: str
    payload: dict
    at: float


class TelegramApi:
    def __init__(self):
        self.calls: list[Called] = []
        self.pending: dict[str, list[dict]] = {}  # per token: updates not yet confirmed
        self.conflict = False
        self.held: set[str] = set()
        self.closing = False
        self.ids = itertools.count(5000)
        self.message_ids = itertools.count(1)
        self.lock = threading.Condition()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    # --- what the test does ---------------------------------------------------------------

    def push(self, token: str, update: dict) -> int:
        """Queue an update for the bot; its update_id."""
        with self.lock:
            update = {"update_id": next(self.ids), **update}
            self.pending.setdefault(token, []).append(update)
            self.lock.notify_all()
            return update["update_id"]

    def press(self, token: str, user_id, data, message: dict | None = None, **sender) -> int:
        query = {"id": f"cq-{time.monotonic_ns()}", "from": {"id": user_id, "is_bot": False,
                 "first_name": "Ops", **sender}, "data": data, "chat_instance": "1"}  # fmt: skip
        if message:
            query["message"] = message
        return self.push(token, {"callback_query": query})

    def say(self, token: str, user_id: int, text: str, username: str = "ops_tg") -> int:
        sender = {"id": user_id, "is_bot": False, "first_name": "Ops", "username": username}
        message = {"message_id": next(self.message_ids), "from": sender, "date": int(time.time()),
                   "chat": {"id": user_id, "type": "private"}, "text": text}  # fmt: skip
        return self.push(token, {"message": message})

    def hold(self, method: str) -> None:
        with self.lock:
            self.held.add(method)

    def release(self) -> None:
        with self.lock:
            self.held.clear()
            self.lock.notify_all()

    def of(self, method: str) -> list[Called]:
        with self.lock:
            return [c for c in self.calls if c.method == method]

    def wait_for(self, method: str, count: int = 1, timeout: float = 30.0, step=None):
        """The first `count` calls of `method`, waiting for them; `step` runs between looks
        (a beat tick)."""
        deadline = time.monotonic() + timeout
        while len(found := self.of(method)) < count:
            assert time.monotonic() < deadline, f"no {count} {method} calls: {self.methods()}"
            if step:
                step()
            with self.lock:
                self.lock.wait(0.1)
        return found[:count]

    def methods(self) -> list[str]:
        with self.lock:
            return [c.method for c in self.calls]

    def close(self) -> None:
        with self.lock:
            self.closing = True
            self.held.clear()
            self.lock.notify_all()
        self.server.shutdown()
        self.server.server_close()

    # --- the server -----------------------------------------------------------------------

    def _answer(self, token: str, method: str, payload: dict) -> tuple[int, dict]:
        with self.lock:
            self.calls.append(Called(token, method, payload, time.monotonic()))
            self.lock.notify_all()
            self.lock.wait_for(lambda: method not in self.held or self.closing)
        if method == "getUpdates":
            return self._updates(token, payload)
        if method == "getMe":
            return 200, {"ok": True, "result": {"id": 42, "is_bot": True, "username": BOT_NAME}}
        if method in ("sendMessage", "editMessageText"):
            return 200, {"ok": True, "result": self._message(payload)}
        if method == "answerCallbackQuery":
            return 200, {"ok": True, "result": True}
        return 404, {"ok": False, "error_code": 404, "description": "Not Found"}

    def _updates(self, token: str, payload: dict) -> tuple[int, dict]:
        if self.conflict:
            return 409, {"ok": False, "error_code": 409, "description": "Conflict: can't use "
                         "getUpdates method while webhook is active"}  # fmt: skip
        offset, wait = int(payload.get("offset") or 0), float(payload.get("timeout") or 0)
        limit = int(payload.get("limit") or 100)

        def ready():
            queue = self.pending.setdefault(token, [])
            queue[:] = [u for u in queue if u["update_id"] >= offset]  # confirmed: forgotten
            return queue or self.closing

        with self.lock:
            self.lock.wait_for(ready, wait)
            return 200, {"ok": True, "result": list(self.pending.get(token, []))[:limit]}

    def _message(self, payload: dict) -> dict:
        chat = payload.get("chat_id")
        chat = int(chat) if str(chat).lstrip("-").isdigit() else chat
        message_id = payload.get("message_id") or next(self.message_ids)
        chat = {"id": chat, "type": "supergroup"}
        return {"message_id": message_id, "date": int(time.time()), "chat": chat,
                "text": payload.get("text", "")}  # fmt: skip

    def _handler(self):
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                _, _, rest = self.path.partition("/bot")
                token, _, method = rest.rpartition("/")
                payload = json.loads(body) if body else {}
                status, answer = api._answer(token, method, payload)
                data = json.dumps(answer).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the caller is gone (a killed worker)

            def log_message(self, *args):
                pass

        return Handler


@pytest.fixture
def telegram(settings):
    """The stand-in as this test's Telegram (DLQ_TELEGRAM_API_URL), polling on."""
    api = TelegramApi()
    threading.Thread(target=api.server.serve_forever, daemon=True).start()
    settings.DLQ_TELEGRAM_API_URL = api.url
    settings.DLQ_TELEGRAM_UPDATES = "poll"
    settings.DLQ_CONSOLE_URL = "https://console.example"
    yield api
    api.close()
