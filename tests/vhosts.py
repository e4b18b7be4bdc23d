"""Vhosts of a test's own on the real broker (they are cheap): made, opened, deleted after.

A plugin of tests/conftest.py: the `vhosts` fixture. Every vhost is named `<unique>-<suffix>`,
the console's user (guest) gets full permissions on it, and it is deleted after the test
with everything in it.
"""

import base64
import contextlib
import json
import urllib.request
from urllib.parse import quote, urlsplit

import pytest

from dlq.broker import amqp


class Vhosts:
    def __init__(self, rabbit, unique):
        self.rabbit, self.prefix = rabbit, unique
        self.made: list[str] = []
        self.conns: list = []

    def make(self, suffix: str) -> str:
        name = f"{self.prefix}-{suffix}"
        self.api("PUT", f"/api/vhosts/{quote(name, safe='')}", {})
        perms = {"configure": ".*", "write": ".*", "read": ".*"}
        user = urlsplit(self.rabbit.url).username
        self.api("PUT", f"/api/permissions/{quote(name, safe='')}/{user}", perms)
        self.made.append(name)
        return name

    def delete(self, name: str) -> None:
        self.api("DELETE", f"/api/vhosts/{quote(name, safe='')}")
        if name in self.made:
            self.made.remove(name)

    def channel(self, vhost: str):
        """A channel in the vhost (closed after the test)."""
        conn = amqp.connect(self.rabbit.url, "dlq-tests", vhost=vhost)
        self.conns.append(conn)
        return conn.channel()

    def api(self, method: str, path: str, body=None):
        parts = urlsplit(self.rabbit.management)
        request = urllib.request.Request(
            f"{parts.scheme}://{parts.hostname}:{parts.port}{path}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"content-type": "application/json"},
        )
        creds = f"{parts.username}:{parts.password}".encode()
        request.add_header("Authorization", "Basic " + base64.b64encode(creds).decode())
        with urllib.request.urlopen(request, timeout=10) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def close(self) -> None:
        for conn in self.conns:
            with contextlib.suppress(*amqp.AllErrors):  # its vhost was deleted under it
                if conn.is_open:
                    conn.close()
        for name in list(self.made):
            with contextlib.suppress(OSError):  # already gone
                self.delete(name)


@pytest.fixture
def vhosts(rabbit, unique):
    made = Vhosts(rabbit, unique)
    yield made
    made.close()
