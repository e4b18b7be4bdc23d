"""A company sign-in gateway in front of the console, the way oauth2-proxy works: it signs
the browser in at the OpenID Connect provider (tests/idp) itself, then forwards every request
to the console with the user and their groups in headers, and strips those headers from
what the browser sent.

It connects to the console from 127.0.0.2, so the console can tell the gateway
(DLQ_AUTH_PROXY_NETS=127.0.0.2/32) from a browser talking to it directly (127.0.0.1).
"""

import http.client
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

import pytest
import requests
from authlib.integrations.requests_client import OAuth2Session
from authlib.oauth2.rfc7636 import create_s256_code_challenge

USER_HEADER, GROUPS_HEADER = "X-Forwarded-User", "X-Forwarded-Groups"
SOURCE = "127.0.0.2"
COOKIE = "_gateway"
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
              "proxy-authorization", "proxy-authenticate"}  # fmt: skip
CLIENT_ID, SECRET = "sign-in-gateway", "gateway-secret"


class Gateway:
    def __init__(self, idp, upstream: str):
        self.idp, self.upstream = idp, urlsplit(upstream)
        self.sessions: dict[str, tuple[str, list[str]]] = {}  # cookie -> (user, groups)
        self.pending: dict[str, tuple[str, str]] = {}  # state -> (code verifier, path)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://localhost:{self.server.server_address[1]}"
        self.metadata = requests.get(idp.discovery_url, timeout=10).json()
        idp.add_client(CLIENT_ID, SECRET, [f"{self.url}/oauth2/callback"])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def oauth(self) -> OAuth2Session:
        return OAuth2Session(CLIENT_ID, SECRET, scope="openid profile groups",
                             redirect_uri=f"{self.url}/oauth2/callback")  # fmt: skip

    def _handler(self):
        gateway = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self._handle()

            def do_POST(self):
                self._handle()

            def _handle(self):
                path = urlsplit(self.path)
                if path.path == "/oauth2/callback":
                    return self._callback(dict(parse_qsl(path.query)))
                cookie = self._cookie()
                if cookie not in gateway.sessions:
                    return self._to_provider()
                self._forward(*gateway.sessions[cookie])

            def _cookie(self) -> str:
                for part in self.headers.get("Cookie", "").split(";"):
                    name, _, value = part.strip().partition("=")
                    if name == COOKIE:
                        return value
                return ""

            def _to_provider(self):
                verifier, state = secrets.token_urlsafe(48), secrets.token_urlsafe(16)
                gateway.pending[state] = (verifier, self.path)
                url, _ = gateway.oauth().create_authorization_url(
                    gateway.metadata["authorization_endpoint"], state=state,
                    code_challenge=create_s256_code_challenge(verifier),
                    code_challenge_method="S256", nonce=secrets.token_urlsafe(16))  # fmt: skip
                self._redirect(url)

            def _callback(self, query):
                verifier, back = gateway.pending.pop(query.get("state", ""), (None, "/"))
                if verifier is None:
                    return self._answer(400, b"unknown state")
                session = gateway.oauth()
                session.fetch_token(gateway.metadata["token_endpoint"], code=query["code"],
                                    code_verifier=verifier)  # fmt: skip
                claims = session.get(gateway.metadata["userinfo_endpoint"]).json()
                cookie = secrets.token_urlsafe(16)
                gateway.sessions[cookie] = (claims["preferred_username"], claims.get("groups", []))
                self._redirect(back, {"Set-Cookie": f"{COOKIE}={cookie}; Path=/; HttpOnly"})

            def _forward(self, user: str, groups: list[str]):
                headers = {
                    k: v
                    for k, v in self.headers.items()
                    if k.lower() not in HOP_BY_HOP
                    and k.lower() not in (USER_HEADER.lower(), GROUPS_HEADER.lower())
                }
                headers.update({USER_HEADER: user, GROUPS_HEADER: ",".join(groups)})  # fmt: skip
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                upstream = http.client.HTTPConnection(gateway.upstream.hostname,
                                                      gateway.upstream.port, timeout=30,
                                                      source_address=(SOURCE, 0))  # fmt: skip
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                content = answer.read()
                self.send_response(answer.status)
                for name, value in answer.getheaders():
                    if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)
                upstream.close()

            def _redirect(self, location: str, headers: dict | None = None):
                self.send_response(302)
                self.send_header("Location", location)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _answer(self, status: int, body: bytes):
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def gateway(idp, live_server):
    server = Gateway(idp, live_server.url)
    yield server
    server.stop()
