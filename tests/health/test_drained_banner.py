"""What `make run`'s banner and `dlq_demo` say DLQ_QUEUES resolved to, per vhost."""

import pytest

from dlq.management.firstrun import drained_lines

pytestmark = pytest.mark.django_db


def test_the_banner_lists_the_queues_dlq_queues_matched_per_vhost(settings, top, unique):
    settings.DLQ_QUEUES = [f"{unique}.*.dlq", f"{unique}.none"]
    a, b = top.queue("a.dlq"), top.queue("b.dlq")
    top.queue("a")  # a work queue: not matched

    lines = drained_lines()

    assert lines[0].startswith(f"DLQ_QUEUES = {unique}.*.dlq,{unique}.none (the queues")
    assert lines[1:] == [f"  drains in vhost /: {a}, {b}"]


def test_the_banner_names_a_queue_it_cannot_drain_and_why(settings, top, unique):
    settings.DLQ_QUEUES = [f"{unique}.*.dlq"]
    fine, nul = top.queue("fine.dlq"), top.queue("nul\x00name.dlq")

    assert drained_lines()[1:] == [
        f"  drains in vhost /: {fine}",
        f"  cannot drain {ascii(nul)} in vhost /: its name holds a NUL character, which the"
        " database cannot store",
    ]


def test_the_banner_names_a_vhost_it_cannot_drain_and_why(settings, vhosts, unique):
    nul, fine = vhosts.make("nul\x00vh"), vhosts.make("fine")
    for vhost in (nul, fine):
        vhosts.channel(vhost).queue_declare("x.dlq")
    settings.DLQ_QUEUES = [f"{unique}-*/x.dlq"]

    assert sorted(drained_lines()[1:]) == [
        f"  cannot drain vhost {ascii(nul)}: its name holds a NUL character, which the"
        " database cannot store",
        f"  drains in vhost {fine}: x.dlq",
    ]


def test_the_banner_says_when_nothing_matched_yet(settings, rabbit, unique):
    settings.DLQ_QUEUES = [f"{unique}.*.dlq"]

    assert drained_lines()[1] == (
        "  no queue matches yet: one that matches later is drained within 30 s"
    )


def test_the_banner_says_when_it_cannot_tell(settings, unique):
    settings.DLQ_QUEUES = [f"{unique}.*.dlq"]
    settings.DLQ_MANAGEMENT_URL = "http://guest:guest@127.0.0.1:9"

    assert "which queues it matches is unknown: management API unreachable" in drained_lines()[1]
