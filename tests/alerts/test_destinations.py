"""Alert webhooks cannot be aimed at the console's own network (security review finding 3):
internal destinations are refused when a channel is saved and when an alert is sent, the
connection goes to the address that was checked, and what answered is never shown or logged.

Only loopback and reserved addresses appear here, and nothing is ever sent to any of them
but the local recording server."""

import ipaddress
import logging
import socket
import threading

import pytest

from dlq.alerts import channels, destinations
from dlq.alerts.formats import Alert
from dlq.alerts.transports import TransportError, WebhookNotifier
from dlq.models import AlertAttempt
from tests.alertfactory import add_channel
from tests.factories import client_for, make_user, post

pytestmark = pytest.mark.django_db

INTERNAL = [
    "http://127.0.0.1:9/hook",  # loopback
    "http://localhost/hook",  # a name that resolves to loopback
    "http://[::1]/hook",
    "http://[::ffff:127.0.0.1]/hook",  # loopback dressed as IPv6
    "http://169.254.169.254/latest/meta-data/",  # cloud metadata (link-local)
    "http://0.0.0.0/hook",
    "http://100.64.0.1/hook",  # shared address space
    "http://192.0.2.1/hook",  # documentation (reserved)
    "http://240.0.0.1/hook",  # reserved
    "http://[64:ff9b::a9fe:a9fe]/hook",  # NAT64 of the metadata address
    "http://[2002:a9fe:a9fe::1]/hook",  # 6to4 of it
    "http://[::7f00:1]/hook",  # IPv4-compatible loopback
]


@pytest.fixture(autouse=True)
def nothing_allowed(settings):
    settings.DLQ_ALERT_ALLOWED_NETS = []


@pytest.mark.parametrize("url", INTERNAL)
def test_an_internal_destination_is_refused_when_saved(url):
    with pytest.raises(channels.ChannelError, match="an internal address"):
        channels.create_channel("webhook", "internal", url=url)
    with pytest.raises(channels.ChannelError, match="DLQ_ALERT_ALLOWED_NETS"):
        channels.create_channel("slack", "internal", url=url)


def test_the_page_refuses_it_with_a_clear_error():
    admin = client_for(make_user("admin"))
    form = {"name": "meta", "url": "http://169.254.169.254/latest/meta-data/"}
    response = post(admin, "/alerts/channels/add/webhook/", form)
    assert response.status_code == 400
    assert "an internal address" in response.content.decode()


def test_allowed_networks_let_an_internal_destination_through(settings):
    settings.DLQ_ALERT_ALLOWED_NETS = [ipaddress.ip_network("127.0.0.0/8")]
    assert channels.create_channel("webhook", "local", url="http://127.0.0.1:9/hook").pk
    with pytest.raises(channels.ChannelError, match="169.254.169.254"):
        channels.create_channel("webhook", "meta", url="http://169.254.169.254/")


def test_a_destination_internal_by_send_time_is_refused_and_nothing_is_sent(endpoint, settings):
    hook = add_channel("webhook", endpoint)  # saved while loopback was allowed
    settings.DLQ_ALERT_ALLOWED_NETS = []

    last = channels.send_test(hook)

    assert endpoint.requests == []
    hook.refresh_from_db()
    assert last.status == "rejected" and not hook.enabled
    assert "an internal address" in hook.disabled_reason


def test_the_connection_goes_to_the_checked_address_not_a_new_lookup(endpoint):
    """A name that resolves nowhere now: a second lookup (a rebinding answer) would fail or
    go elsewhere; the pinned connection reaches the checked address, naming the host."""
    port = endpoint.server.server_address[1]
    notifier = WebhookNotifier(f"http://rebound.invalid:{port}/hook")
    notifier.pin = lambda host, _port: "127.0.0.1"

    assert notifier.send(Alert(title="t", summary="s", url="https://console.example")) == 200

    (request,) = endpoint.wait_for(1)
    assert request.headers["Host"] == f"rebound.invalid:{port}"


def test_a_name_is_checked_in_every_address_it_resolves_to():
    with pytest.raises(destinations.Refused):
        destinations.pinned_address("localhost", 80)


def test_no_proxy_from_the_environment_is_used(endpoint, monkeypatch):
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    hook = add_channel("webhook", endpoint)
    assert channels.send_test(hook).status == "sent"
    assert len(endpoint.requests) == 1


def test_what_answered_is_never_shown_or_logged(endpoint, caplog):
    hook = add_channel("webhook", endpoint)
    endpoint.reply(401, b'{"error": "bad token INTERNAL-DATA-7", "echo": "SECRETsecretSECRET"}')

    with caplog.at_level(logging.DEBUG):
        last = channels.send_test(hook)

    hook.refresh_from_db()
    for text in (last.error, hook.disabled_reason, caplog.text):
        assert "INTERNAL-DATA-7" not in text and "SECRETsecretSECRET" not in text
    assert "HTTP 401: refused" in last.error


def test_a_refusal_is_permanent_and_never_retried():
    notifier = WebhookNotifier("http://example.invalid/hook")
    notifier.pin = destinations.pinned_address
    with pytest.raises(TransportError) as failed:
        notifier.pin = lambda host, port: destinations.pinned_address("localhost", port)
        notifier.send(Alert(title="t", summary="s", url="https://console.example"))
    assert failed.value.permanent and "an internal address" in str(failed.value)


def test_a_url_with_a_user_name_or_password_is_refused(settings):
    settings.DLQ_ALERT_ALLOWED_NETS = [ipaddress.ip_network("127.0.0.0/8")]
    with pytest.raises(channels.ChannelError, match="must not carry a user name or password") as e:
        channels.create_channel("webhook", "creds", url="http://bob:s3cret@127.0.0.1:9/hook")
    assert "s3cret" not in str(e.value)


def test_what_a_non_http_server_says_stays_out_of_the_error(settings, caplog):
    """A banner, a status line: an exception's text can carry it, the error must not."""
    settings.DLQ_ALERT_ALLOWED_NETS = [ipaddress.ip_network("127.0.0.0/8")]
    server = socket.create_server(("127.0.0.1", 0))

    def banner():
        conn, _ = server.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"SSH-2.0-OpenSSH_8.9 SECRET-INTERNAL-BANNER\r\n")

    threading.Thread(target=banner, daemon=True).start()
    port = server.getsockname()[1]
    hook = channels.create_channel("webhook", "banner", url=f"http://127.0.0.1:{port}/hook")

    with caplog.at_level(logging.DEBUG):
        channels.send_test(hook, max_wait=0)  # the retry stays queued
    server.close()

    first = AlertAttempt.objects.filter(channel=hook).order_by("id").first()
    assert first.error == "connection failed: the other end does not speak HTTP"
    assert "SECRET-INTERNAL-BANNER" not in caplog.text
