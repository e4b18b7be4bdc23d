"""A real OpenID Connect provider for the sign-in tests: tests/idp/ (django-oidc-provider)
in a subprocess on a loopback port, started once per session.

A plugin of tests/conftest.py: the `idp` fixture, whose directory (users and clients) is
empty at the start of each test. The console under test runs on http://localhost:PORT, the
IdP on http://127.0.0.1:PORT, so the two never share a cookie.
"""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from tests import ROOT


class IdP:
    def __init__(self, directory: Path):
        self.dir = directory
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        self.discovery_url = f"{self.url}/openid/.well-known/openid-configuration"
        self.out, self.err = directory / "stdout.log", directory / "stderr.log"
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.idp.serve", str(directory), str(port)],
                cwd=ROOT,
                stdout=out,
                stderr=err,
            )
        self._wait_ready()
        self.issuer = requests.get(self.discovery_url, timeout=10).json()["issuer"]
        self.reset()

    def _wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while "READY" not in self.out.read_text().splitlines():
            if self.proc.poll() is not None:
                raise AssertionError(f"the IdP exited: {self.err.read_text()}")
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError(
                    f"the IdP was not ready in {timeout} s: {self.err.read_text()}"
                )
            time.sleep(0.05)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    # --- the directory (tests/idp/directory.py) --------------------------------------------

    def reset(self) -> None:
        self._users: dict[str, dict] = {}
        self._clients: dict[str, dict] = {}
        self._groups_in_id_token = True
        self._write()

    def add_client(self, client_id: str, client_secret: str, redirect_uris: list[str],
                   post_logout_redirect_uris: list[str] = ()) -> None:  # fmt: skip
        """A confidential client (code flow, no consent screen); replaces one of that id."""
        self._clients[client_id] = {
            "client_id": client_id,
            "client_secret": client_secret,
            "redirect_uris": list(redirect_uris),
            "post_logout_redirect_uris": list(post_logout_redirect_uris),
        }
        self._write()

    def add_user(self, username: str, password: str, name: str, email: str,
                 groups: list[str] = ()) -> None:  # fmt: skip
        """A user (replaces one of that username); `groups` come back sorted in claims."""
        self._users[username] = {
            "username": username,
            "password": password,
            "name": name,
            "email": email,
            "groups": list(groups),
        }
        self._write()

    def set_groups(self, username: str, groups: list[str]) -> None:
        self._users[username]["groups"] = list(groups)
        self._write()

    def set_groups_in_id_token(self, on: bool) -> None:
        """Off: the ID token has no `groups`; userinfo still gives them (scope `groups`)."""
        self._groups_in_id_token = on
        self._write()

    def _write(self) -> None:
        """Atomically: the IdP must never read half a file. It compares content, so a
        rewrite within the same mtime tick is seen all the same."""
        directory = {
            "users": list(self._users.values()),
            "clients": list(self._clients.values()),
            "groups_in_id_token": self._groups_in_id_token,
        }
        tmp = self.dir / "directory.json.tmp"
        tmp.write_text(json.dumps(directory, indent=2))
        os.replace(tmp, self.dir / "directory.json")


@pytest.fixture(scope="session")
def idp_process(tmp_path_factory):
    server = IdP(tmp_path_factory.mktemp("idp"))
    yield server
    server.stop()


@pytest.fixture
def idp(idp_process):
    """The IdP, its directory emptied: a test adds the clients and users it needs."""
    idp_process.reset()
    return idp_process
