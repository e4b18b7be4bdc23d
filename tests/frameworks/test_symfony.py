"""A real Symfony Messenger 5.4 application (tests/frameworks/symfony/app.php, Debian's
packages) fails messages through its delay queues into its failure transport; the console
drains that, says what failed where, and replays to `original` after the fix: each message
handled once, by the application.

With Symfony's JSON serializer a replayed message that fails again comes back to the
failure transport (the replay drops the SentToFailureTransportStamp header). With
PhpSerializer that stamp is inside the body, which a replay never changes: Symfony then
rejects the second failure instead, as the README says; the test shows that too.
"""

import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from dlq.drain.estate import Estate
from dlq.models import Message, Status
from tests.factories import client_for, make_user
from tests.topology import wait_depth

pytestmark = pytest.mark.django_db(transaction=True)
APP = Path(__file__).parent / "symfony" / "app.php"
PACKAGES = "php-cli php-amqp php-symfony-messenger php-symfony-amqp-messenger ..."
INVOICE = "App\\Message\\SubmitInvoice"


def _php_missing() -> str | None:
    if shutil.which("php") is None:
        return "php is not installed"
    probe = subprocess.run(["php", "-m"], capture_output=True, text=True, check=False)
    if "amqp" not in probe.stdout.split():
        return "php has no amqp extension"
    if not Path("/usr/share/php/Symfony/Component/Messenger/autoload.php").exists():
        return "Symfony Messenger is not installed"
    return None


@pytest.fixture
def php():
    missing = _php_missing()
    if missing:
        why = f"{missing}: the Symfony tests need {PACKAGES} (.ci/services installs them)"
        if os.environ.get("DLQ_TEST_ALL_FRAMEWORKS") == "1":
            pytest.fail(why)
        pytest.skip(why)


class SymfonyApp:
    def __init__(self, rabbit, vhost: str, serializer: str, state: Path):
        self.vhost, self.serializer, self.state = vhost, serializer, state
        self.env = {**os.environ, "AMQP_PORT": str(urlsplit(rabbit.url).port or 5672)}

    def _php(self, *args: str, timeout: float = 60) -> None:
        done = subprocess.run(
            ["php", str(APP), *args], env=self.env, capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]

    def send(self, count: int) -> None:
        self._php("send", self.vhost, str(count), self.serializer)

    def work(self, seconds: int = 3) -> None:
        """Consume the transport: each failure is retried twice (0.2 s, 0.4 s) first."""
        self._php("work", self.vhost, self.serializer, str(self.state), str(seconds))

    def fix(self) -> None:
        (self.state / "fixed").touch()

    @property
    def handled(self) -> list[str]:
        path = self.state / "handled"
        return path.read_text().split() if path.exists() else []


def drain(vhost: str) -> list[Message]:
    assert Estate(patterns=[f"{vhost}/failed"], once=True).run() == 0
    return list(Message.objects.filter(vhost=vhost, queue="failed").order_by("id"))


def replay(client, message: Message) -> None:
    answer = client.post(
        f"/api/v1/messages/{message.pk}/replay",
        {"target": "original", "reason": "ledger is back"},
        content_type="application/json",
    ).json()
    assert answer["outcome"] == "confirmed", answer


def assert_understood(message: Message) -> None:
    """What an operator reads: which message, which exception, where, how often retried."""
    assert message.message_type == INVOICE
    assert message.exception_type == "RuntimeException"
    assert message.exception_message.startswith("ledger unavailable for INV-")
    assert (message.failed_queue, message.death_reason) == ("async", "handler_failed")
    assert message.delivery_count == 2  # Symfony's highest retry count
    assert (message.original_exchange, message.original_routing_keys) == ("", ["async"])


@pytest.mark.parametrize("serializer", ["json", "php"])
def test_symfony_failures_are_understood_and_replayed_once_after_the_fix(
    php, rabbit, vhosts, tmp_path, serializer
):
    vhost = vhosts.make("symfony")
    app = SymfonyApp(rabbit, vhost, serializer, tmp_path)
    channel = vhosts.channel(vhost)
    app.send(2)
    app.work()
    wait_depth(channel, "failed", 2)
    messages = drain(vhost)
    assert len(messages) == 2
    for message in messages:
        assert_understood(message)

    page = client_for(make_user("viewer")).get(f"/messages/{messages[0].pk}/").content.decode()
    assert 'id="symfony"' in page and "after failing on transport <strong>async</strong>" in page
    assert "ledger unavailable for INV-0001" in page
    if serializer == "php":  # the envelope's message, read out of the body
        assert "<code>invoiceId</code></td><td>INV-0001</td>" in page

    client = client_for(make_user("operator"), token=True)
    route = client.get(f"/api/v1/messages/{messages[0].pk}/route?target=original").json()
    assert (route["exchange"], route["routing_key"], route["queues"]) == ("", "async", ["async"])
    assert "failure transport" in route["note"]

    app.fix()
    for message in messages:
        replay(client, message)
    app.work(2)
    assert sorted(app.handled) == ["INV-0001", "INV-0002"]  # each once, by Symfony
    assert {m.status for m in Message.objects.filter(pk__in=[m.pk for m in messages])} == {
        Status.REPLAYED
    }


def test_a_replayed_message_that_fails_again_comes_back_with_the_json_serializer(
    php, rabbit, vhosts, tmp_path
):
    vhost = vhosts.make("symfony")
    app = SymfonyApp(rabbit, vhost, "json", tmp_path)
    channel = vhosts.channel(vhost)
    app.send(1)
    app.work()
    wait_depth(channel, "failed", 1)
    [first] = drain(vhost)

    client = client_for(make_user("operator"), token=True)
    replay(client, first)  # not fixed yet: it fails again, through its retries
    app.work()
    wait_depth(channel, "failed", 1)
    [again] = [m for m in drain(vhost) if m.pk != first.pk]
    assert_understood(again)
    assert (again.previous_id, again.replay_count) == (first.pk, 1)


def test_with_the_php_serializer_symfony_drops_a_replayed_message_that_fails_again(
    php, rabbit, vhosts, tmp_path
):
    """What the README says holds for PhpSerializer: the stamp is in the body."""
    vhost = vhosts.make("symfony")
    app = SymfonyApp(rabbit, vhost, "php", tmp_path)
    channel = vhosts.channel(vhost)
    app.send(1)
    app.work()
    wait_depth(channel, "failed", 1)
    [first] = drain(vhost)

    replay(client_for(make_user("operator"), token=True), first)
    app.work()
    for queue in ("failed", "async"):
        assert channel.queue_declare(queue, passive=True).method.message_count == 0
    assert app.handled == []
