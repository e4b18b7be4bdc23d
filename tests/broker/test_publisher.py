"""What an `error` outcome tells the operator: a publish whose confirm never came may be in
its queue; one never sent is not."""

from dlq.broker import amqp
from dlq.broker.publisher import MAY_BE_STORED, ConfirmPublisher, Outgoing
from tests.topology import wait_depth


def _outgoing(queue: str, key: str) -> Outgoing:
    headers = {"dlq-replay-id": {"type": "longstr", "value": key}}
    return Outgoing(key, "", queue, b"x", amqp.make_properties({}, headers))


def test_no_confirm_in_time_says_the_message_may_be_stored_and_it_is(rabbit, channel, top):
    queue = top.queue("work")
    publisher = ConfirmPublisher(rabbit.url)
    try:
        # No time to wait: sent, then given up before any confirm could come.
        outcome, detail = publisher.publish([_outgoing(queue, "a")], timeout=0)["a"]
    finally:
        publisher.close()
    assert (outcome, detail) == ("error", f"no confirm in time: {MAY_BE_STORED}")
    wait_depth(channel, queue, 1)  # what the detail warns of: it did arrive


def test_a_publish_never_sent_says_it_is_safe_to_replay_again(rabbit, channel, top):
    queue = top.queue("work")
    publisher = ConfirmPublisher(rabbit.url, window=1)
    try:
        results = publisher.publish([_outgoing(queue, "a"), _outgoing(queue, "b")], timeout=0)
    finally:
        publisher.close()
    assert results["b"] == ("error", "not sent, safe to replay again: timed out")
    assert results["a"][1].startswith("no confirm in time")
