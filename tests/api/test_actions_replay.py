"""Replay and route preview through the API, against the real broker."""

import pytest

from dlq.actions import message as message_actions
from dlq.models import Message, Status
from dlq.models.actions import AuditEntry, Replay
from tests.factories import client_for, make_message, make_user
from tests.topology import get

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator():
    return client_for(make_user("operator"), token=True)


def _replay(client, message_id, target, reason="consumer fixed", **extra):
    body = {"target": target, "reason": reason}
    return client.post(f"/api/v1/messages/{message_id}/replay", body,
                       content_type="application/json", **extra)  # fmt: skip


def _parked(top, work: str, **kwargs) -> Message:
    return make_message(queue=top.name("dlq"), died_in=work, exchange="", routing_key=work,
                        **kwargs)  # fmt: skip


def test_it_replays_to_a_real_queue_and_the_consumer_gets_it(channel, top, operator):
    work = top.queue("work")
    m = _parked(top, work, body=b'{"order": 7}', content_type="application/json",
                headers={"tenant": "acme"})  # fmt: skip

    response = _replay(operator, m.pk, "original", headers={"X-Request-ID": "replay-1"})

    assert response.status_code == 200
    answer = response.json()
    assert (answer["outcome"], answer["message"]) == ("confirmed", m.pk)
    assert len(answer["replay_id"]) == 32
    _, props, body = get(channel, work)
    assert body == b'{"order": 7}'
    assert props.content_type == "application/json"
    headers = props.headers  # typed, as the console's codec reads them
    assert headers["dlq-replay-id"] == {"type": "longstr", "value": answer["replay_id"]}
    assert headers["tenant"] == {"type": "longstr", "value": "acme"}
    assert "x-death" not in headers
    detail = operator.get(f"/api/v1/messages/{m.pk}").json()
    assert (detail["status"], detail["replay_count"]) == ("replayed", 1)
    replayed = [e for e in detail["history"] if e["event"] == "replayed"]
    assert replayed[0]["detail"]["outcome"] == "confirmed"
    assert replayed[0]["actor"].startswith("operator-")
    entry = AuditEntry.objects.get(action="replay")
    assert (entry.message_ids, entry.request_id) == ([m.pk], "replay-1")


def test_it_replays_to_the_failed_queue_and_to_a_named_exchange(channel, top, operator):
    work, other = top.queue("work"), top.queue("other")
    first, second = _parked(top, work), _parked(top, work)

    assert _replay(operator, first.pk, "failed_queue").json()["outcome"] == "confirmed"
    custom = {"exchange": "", "routing_key": other}
    assert _replay(operator, second.pk, custom).json()["outcome"] == "confirmed"

    assert get(channel, work)[2] == bytes(first.body)
    assert get(channel, other)[2] == bytes(second.body)
    assert Replay.objects.get(message=second).target == "custom"


def test_it_answers_unroutable_with_200_and_keeps_the_message_parked(top, operator):
    lonely = top.exchange("lonely")
    m = _parked(top, top.queue("work"))

    response = _replay(operator, m.pk, {"exchange": lonely, "routing_key": "nobody.listens"})

    assert response.status_code == 200
    assert response.json()["outcome"] == "unroutable"
    assert "NO_ROUTE" in response.json()["detail"]
    assert Message.objects.get(pk=m.pk).status == Status.PARKED
    detail = operator.get(f"/api/v1/messages/{m.pk}").json()
    assert detail["history"][-1]["detail"]["outcome"] == "unroutable"


def test_it_answers_a_missing_exchange_as_an_error_outcome(top, operator):
    m = _parked(top, top.queue("work"))
    response = _replay(operator, m.pk, {"exchange": top.name("nowhere"), "routing_key": "k"})
    assert response.status_code == 200
    assert response.json()["outcome"] == "error"
    assert Message.objects.get(pk=m.pk).status == Status.PARKED


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("elsewhere", 'must be "original", "failed_queue" or'),
        ({"exchange": "x"}, "routing_key: is required"),
        ({"exchange": "x", "routing_key": "k", "cc": "y"}, "cc: Extra inputs are not permitted"),
        ({"exchange": "x" * 256, "routing_key": "k"}, "exchange: must be at most 255 characters"),
        ({"exchange": "\u00e9" * 200, "routing_key": "k"}, "longer than 255 bytes"),
        ({"exchange": "a\x00b", "routing_key": "k"}, "must not contain NUL characters"),
    ],
)
def test_it_refuses_a_bad_target_field_by_field(top, operator, target, problem):
    m = _parked(top, top.queue("work"))
    response = _replay(operator, m.pk, target)
    assert response.status_code == 400
    body = response.json()
    assert body["detail"] == "invalid input"
    assert list(body["errors"]) == ["target"]
    assert problem in body["errors"]["target"][0]
    assert Message.objects.get(pk=m.pk).status == Status.PARKED
    assert not Replay.objects.exists()


@pytest.mark.parametrize(
    ("body", "errors"),
    [
        ({"target": "original"}, {"reason": ["is required"]}),
        ({"target": "original", "reason": "  "}, {"reason": ["a reason is required"]}),
        (
            {"target": "original", "reason": "a\x00"},
            {"reason": ["must not contain NUL characters"]},
        ),
    ],
)
def test_it_wants_a_reason(top, operator, body, errors):
    m = _parked(top, top.queue("work"))
    url = f"/api/v1/messages/{m.pk}/replay"
    response = operator.post(url, body, content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"detail": "invalid input", "errors": errors}


def test_it_answers_400_to_a_body_that_is_not_json(top, operator):
    m = _parked(top, top.queue("work"))
    url = f"/api/v1/messages/{m.pk}/replay"
    response = operator.post(url, b"{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json()["errors"] == {"__all__": ["Cannot parse request body"]}


def test_it_answers_409_to_a_replay_of_a_message_that_is_not_parked(top, operator):
    m = _parked(top, top.queue("work"))
    message_actions.discard(m.pk, "ops", "junk")
    response = _replay(operator, m.pk, "failed_queue")
    assert response.status_code == 409
    assert response.json() == {
        "detail": f"message {m.pk} is discarded; only parked messages can be replayed"
    }


def test_it_answers_404_to_a_replay_of_an_unknown_message(operator):
    response = _replay(operator, 987654321, "failed_queue")
    assert response.status_code == 404
    assert response.json() == {"detail": "message 987654321 does not exist"}


# --- route preview ------------------------------------------------------------------------


def _route(client, message_id, **params):
    return client.get(f"/api/v1/messages/{message_id}/route", params)


def test_it_previews_the_route_of_each_target(top):
    viewer = client_for(make_user("viewer"), token=True)
    work = top.queue("work")
    lonely = top.exchange("lonely")
    m = _parked(top, work)

    assert _route(viewer, m.pk, target="failed_queue").json() == {
        "target": "failed_queue", "exchange": "", "routing_key": work,
        "queues": [work], "warning": None, "drained": [], "replay_target": None, "note": None,
    }  # fmt: skip
    assert _route(viewer, m.pk).json()["queues"] == [work]  # original is the default
    custom = _route(viewer, m.pk, exchange=lonely, routing_key="k").json()
    assert (custom["target"], custom["queues"]) == ("custom", [])
    assert "unroutable" in custom["warning"]


def test_it_refuses_an_unresolvable_route_with_400(top):
    viewer = client_for(make_user("viewer"), token=True)
    m = _parked(top, top.queue("work"))
    cases = [
        ({"exchange": "\u00e9" * 200, "routing_key": "k"}, "longer than 255 bytes"),
        ({"target": "failed_queue", "exchange": "x"}, "not both"),
        ({"target": "somewhere"}, "must be one of"),
    ]
    for params, problem in cases:
        response = _route(viewer, m.pk, **params)
        assert response.status_code == 400
        assert list(response.json()["errors"]) == ["target"]
        assert problem in response.json()["errors"]["target"][0]


def test_it_answers_404_to_a_route_of_an_unknown_message():
    viewer = client_for(make_user("viewer"), token=True)
    response = _route(viewer, 987654321, target="original")
    assert response.status_code == 404
