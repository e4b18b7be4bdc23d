"""Which acks of a lost connection took effect: what the ack ledger decides, by itself.

The broker side is proven on a real cluster (tests/clustered/test_drain_node_loss.py); here
the ledger's answer is given, and the decision is checked for each way a connection ends.
"""

import pytest

from dlq.drain import ledger as ledger_module
from dlq.drain.ledger import AckLedger

BATCHES = ["c" * 24 + f"{n:08x}" for n in range(1, 5)]


def _ledger_after(monkeypatch, note, *, silent, quorum, answered_last=False):
    """A ledger whose connection acked BATCHES, the last commit unanswered unless
    `answered_last`, then was lost; its queue holds `note`. What it hands the writer."""
    items = []
    ledger = AckLedger(items.append)
    for batch in BATCHES:
        ledger.committing(batch, "drainer", quorum)
        if batch != BATCHES[-1] or answered_last:
            ledger.answered()
    ledger.lost(silent=silent)
    monkeypatch.setattr(ledger_module, "read_ledger", lambda conn, name: note)
    ledger.settle_doubts(conn=None)
    return [(type(i).__name__, getattr(i, "last_acked", None) or getattr(i, "batches", None))
            for i in items]  # fmt: skip


def test_a_quorum_ack_unanswered_when_the_node_went_silent_keeps_its_batch_pending(
    monkeypatch,
):
    # The note landed (the hung node processed the commit on coming back); the queue may
    # still give the messages back: the batch stays pending, the answered ones are settled.
    items = _ledger_after(monkeypatch, BATCHES[-1], silent=True, quorum=True)
    assert items == [
        ("ForgetUpto", BATCHES[-2]),
        ("Restore", [(BATCHES[-1], "drainer")]),
    ]


@pytest.mark.parametrize(
    "silent, quorum", [(False, True), (True, False)], ids=["closed", "classic"]
)
def test_otherwise_the_ledger_decides_the_unanswered_commit(monkeypatch, silent, quorum):
    # A connection the broker closed applies a quorum ack it processed (the leader is the
    # same); a classic queue applies it even when the node processes it late.
    assert _ledger_after(monkeypatch, BATCHES[-1], silent=silent, quorum=quorum) == [
        ("ForgetUpto", BATCHES[-1])
    ]
    assert _ledger_after(monkeypatch, BATCHES[-2], silent=silent, quorum=quorum) == [
        ("ForgetUpto", BATCHES[-2]),
        ("Restore", [(BATCHES[-1], "drainer")]),
    ]


def test_answered_commits_count_whatever_the_ledger_holds(monkeypatch):
    # An empty ledger (purged, declared anew) used to make every batch of the connection
    # pending again, acked ones too: twins of their messages would be taken for copies.
    assert _ledger_after(monkeypatch, None, silent=False, quorum=False, answered_last=True) == [
        ("ForgetUpto", BATCHES[-1])
    ]
    assert _ledger_after(monkeypatch, None, silent=True, quorum=True) == [
        ("ForgetUpto", BATCHES[-2]),
        ("Restore", [(BATCHES[-1], "drainer")]),
    ]
