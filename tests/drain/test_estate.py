"""One drainer process, many vhosts: `VHOST/QUEUE` patterns, vhosts that come and go, a vhost
the console's user cannot read, each message kept with its own vhost."""

import signal
import time

import pytest
from django.core.exceptions import ImproperlyConfigured

from console.env import env_patterns
from dlq.models import Message
from tests.drainproc import run_once, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

FAST_RESOLVE = {"DLQ_RESOLVE_SECONDS": "1"}


def park(vhosts, vhost: str, queue: str, bodies: list[bytes]) -> None:
    ch = vhosts.channel(vhost)
    ch.queue_declare(queue, durable=True)
    for body in bodies:
        ch.basic_publish("", queue, body)


def stored(vhost: str, queue: str) -> list[bytes]:
    rows = Message.objects.filter(vhost=vhost, queue=queue).order_by("id")
    return sorted(bytes(m.body) for m in rows)


def test_every_vhost_a_glob_names_is_drained_into_its_own_rows(vhosts, spawn, db_url, unique):
    a, b = vhosts.make("a"), vhosts.make("b")
    other = vhosts.make("other")
    # The same queue name in two vhosts: two queues, never mixed.
    park(vhosts, a, "orders.dlq", [b"a1", b"a2"])
    park(vhosts, b, "orders.dlq", [b"b1"])
    park(vhosts, other, "orders.parked", [b"not drained"])

    proc = spawn([f"{unique}-*/*.dlq"], db_url, env=FAST_RESOLVE)
    wait_for(lambda: Message.objects.filter(queue="orders.dlq").count() == 3, 60, "both vhosts")
    assert stored(a, "orders.dlq") == [b"a1", b"a2"]
    assert stored(b, "orders.dlq") == [b"b1"]

    # A vhost made later is drained without a restart.
    c = vhosts.make("c")
    park(vhosts, c, "late.dlq", [b"c1"])
    wait_for(lambda: stored(c, "late.dlq") == [b"c1"], 30, "the new vhost")

    # A deleted vhost is let go; its messages stay, the others go on.
    vhosts.delete(a)
    wait_for(lambda: proc.events("vhost is gone, no longer drained", prefix=True), 30, "let go")
    park(vhosts, b, "orders.dlq", [b"b2"])
    wait_for(lambda: stored(b, "orders.dlq") == [b"b1", b"b2"], 30, "the others to go on")
    assert stored(a, "orders.dlq") == [b"a1", b"a2"]
    assert not Message.objects.filter(vhost=other).exists()

    assert proc.alive()
    assert proc.stop(signal.SIGTERM) == 0, proc.log()[-3000:]


def test_a_vhost_it_cannot_read_does_not_stop_the_others(vhosts, spawn, db_url, unique, rabbit):
    readable = vhosts.make("ok")
    closed = vhosts.make("closed")
    user = rabbit.url.split("//", 1)[1].split(":", 1)[0]
    vhosts.api("DELETE", f"/api/permissions/{closed}/{user}")
    park(vhosts, readable, "x.dlq", [b"one"])

    proc = spawn([f"{unique}-*/x.dlq"], db_url, env=FAST_RESOLVE)
    wait_for(lambda: stored(readable, "x.dlq") == [b"one"], 60, "the readable vhost")
    wait_for(lambda: proc.events("backing off", prefix=True), 30, "the closed vhost to back off")
    assert any(closed in line for line in proc.events("backing off", prefix=True))
    assert proc.alive()
    assert proc.stop(signal.SIGTERM) == 0, proc.log()[-3000:]


def test_a_vhost_whose_name_holds_nul_is_left_alone_and_the_others_drain(
    vhosts, spawn, db_url, unique
):
    # As a queue's (tests/drain/test_queues.py): the database cannot hold the name.
    nul, fine = vhosts.make("nul\x00vh"), vhosts.make("fine")
    park(vhosts, nul, "x.dlq", [b"stays"])
    park(vhosts, fine, "x.dlq", [b"one"])

    proc = spawn([f"{unique}-*/x.dlq"], db_url, env=FAST_RESOLVE)
    wait_for(lambda: stored(fine, "x.dlq") == [b"one"], 60, "the other vhost")

    [event] = proc.events("vhost not drained, its messages stay in the broker")
    assert ascii(nul) in event and "NUL character" in event
    assert vhosts.channel(nul).queue_declare("x.dlq", passive=True).method.message_count == 1
    assert proc.alive()
    assert proc.stop(signal.SIGTERM) == 0, proc.log()[-3000:]


def test_once_drains_a_literal_vhost_and_queue(vhosts, db_url, unique):
    a = vhosts.make("a")
    park(vhosts, a, "one.dlq", [b"x", b"y"])
    proc = run_once([f"{unique}-a/one.dlq"], db_url)
    assert proc.proc.returncode == 0, proc.log_text[-3000:]
    assert stored(a, "one.dlq") == [b"x", b"y"]


@pytest.mark.parametrize(
    "value, complaint",
    [
        ("a.dlq,,b.dlq", "empty item"),
        ("/orders.dlq", "empty part"),
        ("billing/", "empty part"),
        ("bad%zz/q", "escape"),
    ],
)
def test_junk_in_dlq_queues_is_a_start_up_error_naming_it(monkeypatch, value, complaint):
    monkeypatch.setenv("DLQ_QUEUES", value)
    with pytest.raises(ImproperlyConfigured, match=complaint) as raised:
        env_patterns("DLQ_QUEUES", "*.dlq")
    assert "DLQ_QUEUES" in str(raised.value)


def test_a_vhost_drainer_that_fails_is_let_go_and_restarted(vhosts, unique, settings, monkeypatch):
    """A drainer thread that dies of a bug (not a broker error) must not leave the shared
    writer waiting for its acks: the other vhosts go on, and it is started again."""
    import threading

    from dlq.drain.drainer import Drainer
    from dlq.drain.estate import Estate

    settings.DLQ_RESOLVE_SECONDS = 1
    a, b = vhosts.make("a"), vhosts.make("b")
    park(vhosts, a, "x.dlq", [f"a{i}".encode() for i in range(300)])
    seen = {"a": 0}
    real = Drainer._on_message

    def failing_once(self, queue, *args):
        if self.vhost == a:
            seen["a"] += 1
            if seen["a"] == 150:  # mid-drain, with batches of it stored and in flight
                raise RuntimeError("a bug in the drainer")
        return real(self, queue, *args)

    monkeypatch.setattr(Drainer, "_on_message", failing_once)
    estate = Estate(patterns=[f"{unique}-*/x.dlq"], batch_size=50)
    thread = threading.Thread(target=estate.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: len(stored(a, "x.dlq")) == 300, 60, "vhost a, after its restart")
        park(vhosts, b, "x.dlq", [b"b1", b"b2"])
        wait_for(lambda: stored(b, "x.dlq") == [b"b1", b"b2"], 30, "the other vhost")
    finally:
        estate.stop()
        thread.join(timeout=90)
    assert not thread.is_alive()
    assert stored(a, "x.dlq") == sorted(f"a{i}".encode() for i in range(300))  # once each


def test_a_hung_management_api_holds_no_vhost_back(vhosts, unique, settings, node1, rabbit):
    """A drainer asks the management API for its queues in the background: while it hangs
    (each question waits for its timeout), every vhost's messages are stored and acked at
    once. Asked from the drainer's own thread, the question kept that thread from sending
    its acks, and the writer every vhost shares waits for them before its next batch."""
    import threading

    from dlq.drain.estate import Estate

    settings.DLQ_RESOLVE_SECONDS = 1
    settings.DLQ_MANAGEMENT_URL = node1.url(rabbit.management)  # one node: hung, it hangs
    a, b = vhosts.make("a"), vhosts.make("b")
    park(vhosts, a, "x.dlq", [b"a0"])
    park(vhosts, b, "x.dlq", [b"b0"])
    estate = Estate(patterns=[f"{a}/x.dlq", f"{b}/x.dlq", f"{a}/late.dlq"])
    thread = threading.Thread(target=estate.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: stored(a, "x.dlq") + stored(b, "x.dlq") == [b"a0", b"b0"], 30, "both")
        node1.freeze()
        time.sleep(2)  # both drainers have asked since, and wait for the answer
        for n in range(1, 4):
            park(vhosts, a, "x.dlq", [f"a{n}".encode()])
            park(vhosts, b, "x.dlq", [f"b{n}".encode()])
            # Asked in the drainer's thread, each batch waited for a 5 s timeout.
            wait_for(lambda n=n: len(stored(a, "x.dlq") + stored(b, "x.dlq")) == 2 * n + 2,
                     3, f"round {n} stored while the management API hangs")  # fmt: skip
        # Discovery goes on: an answer that never comes falls back to probing the names.
        park(vhosts, a, "late.dlq", [b"late"])
        wait_for(lambda: stored(a, "late.dlq") == [b"late"], 30, "the queue made meanwhile")
    finally:
        estate.stop()
        thread.join(timeout=90)
    assert not thread.is_alive()
    # Acked, every one: the closed connections would have given back what was not.
    for vhost, queue in [(a, "x.dlq"), (b, "x.dlq"), (a, "late.dlq")]:
        depth = vhosts.channel(vhost).queue_declare(queue, passive=True).method.message_count
        assert depth == 0, (vhost, queue)
