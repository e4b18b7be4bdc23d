"""Discard (soft) and restore, and the status rules every action follows: 409 for a status
that does not allow it, 404 for an unknown id, a reason always."""

import pytest

from dlq.actions import message as message_actions
from dlq.models import Message, Status
from dlq.models.actions import AuditEntry, Replay
from tests.factories import make_message
from tests.topology import depth

pytestmark = pytest.mark.django_db(transaction=True)


def _status(m: Message) -> str:
    return Message.objects.get(pk=m.pk).status


def test_it_discards_and_restores_with_a_reason_each():
    m = make_message()

    discarded = message_actions.discard(m.pk, "dave", "known bad data")
    assert discarded.status == _status(m) == Status.DISCARDED
    restored = message_actions.restore(m.pk, "dave", "needed after all")
    assert restored.status == _status(m) == Status.PARKED

    entries = list(AuditEntry.objects.order_by("id"))
    assert [(e.action, e.reason, e.actor_name, e.message_ids) for e in entries] == [
        ("discard", "known bad data", "dave", [m.pk]),
        ("restore", "needed after all", "dave", [m.pk]),
    ]


def test_it_refuses_actions_the_status_does_not_allow(channel, top):
    work = top.queue("work")
    parked = make_message(queue=top.name("dlq"), died_in=work)
    replayed = make_message(queue=top.name("dlq"), died_in=work)
    discarded = make_message(queue=top.name("dlq"), died_in=work)
    assert (
        message_actions.replay_one(replayed.pk, "failed_queue", "dave", "go").outcome == "confirmed"
    )
    message_actions.discard(discarded.pk, "dave", "junk")
    replaying = make_message(queue=top.name("dlq"), died_in=work)
    Message.objects.filter(pk=replaying.pk).update(status=Status.REPLAYING)
    audit_rows = AuditEntry.objects.count()

    refused = [
        lambda: message_actions.replay_one(replayed.pk, "failed_queue", "dave", "twice"),
        lambda: message_actions.replay_one(discarded.pk, "failed_queue", "dave", "discarded"),
        lambda: message_actions.replay_one(replaying.pk, "failed_queue", "dave", "in flight"),
        lambda: message_actions.restore(parked.pk, "dave", "not discarded"),
        lambda: message_actions.restore(replayed.pk, "dave", "not discarded"),
        lambda: message_actions.discard(discarded.pk, "dave", "again"),
        lambda: message_actions.discard(replayed.pk, "dave", "already replayed"),
        lambda: message_actions.edit(replayed.pk, "dave", "late", body_text="x"),
        lambda: message_actions.edit(discarded.pk, "dave", "late", body_text="x"),
    ]
    for action in refused:
        with pytest.raises(message_actions.Conflict) as conflict:
            action()
        assert conflict.value.status == 409

    assert [_status(m) for m in (parked, replayed, discarded, replaying)] == [
        Status.PARKED, Status.REPLAYED, Status.DISCARDED, Status.REPLAYING]  # fmt: skip
    assert Replay.objects.count() == 1
    assert depth(channel, work) == 1  # nothing was published twice
    assert AuditEntry.objects.count() == audit_rows


def test_it_answers_not_found_for_an_unknown_id():
    ghost = 10**12
    for action in (
        lambda: message_actions.replay_one(ghost, "original", "dave", "why"),
        lambda: message_actions.discard(ghost, "dave", "why"),
        lambda: message_actions.restore(ghost, "dave", "why"),
        lambda: message_actions.edit(ghost, "dave", "why", body_text="x"),
    ):
        with pytest.raises(message_actions.NotFound) as missing:
            action()
        assert missing.value.status == 404
        assert str(ghost) in str(missing.value)
    assert not AuditEntry.objects.exists()


def test_it_requires_a_reason_for_every_action():
    m = make_message()
    for reason in ("", "  \t", None, 42):
        for action in (
            lambda: message_actions.replay_one(m.pk, "original", "dave", reason),  # noqa: B023
            lambda: message_actions.discard(m.pk, "dave", reason),  # noqa: B023
            lambda: message_actions.edit(m.pk, "dave", reason, body_text="x"),  # noqa: B023
        ):
            with pytest.raises(message_actions.ActionError) as refused:
                action()
            assert refused.value.errors == {"reason": ["a reason is required"]}
    message_actions.discard(m.pk, "dave", "for the restore case")
    for reason in ("", "  \t", None, 42):
        with pytest.raises(message_actions.ActionError) as refused:
            message_actions.restore(m.pk, "dave", reason)
        assert list(refused.value.errors) == ["reason"]
    assert _status(m) == Status.DISCARDED
    assert not Replay.objects.exists()
    assert AuditEntry.objects.count() == 1
