from datetime import UTC, datetime, timedelta

import pytest

from dlq.models import Message
from tests.factories import client_for, make_message, make_user

pytestmark = pytest.mark.django_db
T0 = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def seeded():
    order = make_message(received_at=T0)
    payment = make_message(
        queue="payments.dlq",
        died_in="payments",
        reason="expired",
        exchange="payments.events",
        routing_key="payment.failed",
        dlx="payments.dlx",
        delivered_key="parked.payments",
        received_at=T0 + timedelta(hours=1),
        headers={
            "MT-Fault-ExceptionType": "System.TimeoutException",
            "MT-Fault-Message": "gateway timed out",
        },
    )
    Message.objects.filter(pk=payment.pk).update(status="discarded")
    late = make_message(
        received_at=T0 + timedelta(hours=2), reason="delivery_limit", vhost="sales",
        headers={"task": "orders.tasks.charge"},
    )  # fmt: skip
    return order, payment, late


def ids(**params) -> list[int]:
    client = client_for(make_user("viewer"), token=True)
    response = client.get("/api/v1/messages", params)
    assert response.status_code == 200, response.content
    return [m["id"] for m in response.json()["results"]]


def test_it_lists_every_status_newest_first_without_filters(seeded):
    order, payment, late = seeded
    assert ids() == [late.id, payment.id, order.id]


def test_it_filters_by_queue(seeded):
    order, payment, late = seeded
    assert ids(queue="payments.dlq") == [payment.id]
    assert ids(queue="orders.dlq") == [late.id, order.id]
    assert ids(queue="orders") == []


def test_it_filters_by_status(seeded):
    order, payment, late = seeded
    assert ids(status="discarded") == [payment.id]
    assert ids(status="parked") == [late.id, order.id]
    assert ids(status="replayed") == []


def test_it_filters_by_death_reason(seeded):
    order, payment, late = seeded
    assert ids(reason="expired") == [payment.id]
    assert ids(reason="rejected") == [order.id]


def test_it_filters_by_the_exchange_or_the_original_exchange(seeded):
    order, payment, late = seeded
    assert ids(exchange="payments.dlx") == [payment.id]
    assert ids(exchange="payments.events") == [payment.id]
    assert ids(exchange="orders.events") == [late.id, order.id]


def test_it_filters_by_the_routing_key_or_the_original_one(seeded):
    order, payment, late = seeded
    assert ids(routing_key="parked.payments") == [payment.id]
    assert ids(routing_key="payment.failed") == [payment.id]
    assert ids(routing_key="order.created") == [late.id, order.id]


def test_it_filters_by_exception_type(seeded):
    order, payment, late = seeded
    assert ids(exception_type="System.TimeoutException") == [payment.id]


def test_it_filters_by_group(seeded):
    order, payment, late = seeded
    assert order.group != late.group
    assert ids(group=order.group) == [order.id]


def test_it_filters_by_received_time(seeded):
    order, payment, late = seeded
    assert ids(received_after="2025-05-01T13:00:00Z") == [late.id, payment.id]
    assert ids(received_before="2025-05-01T13:00:00+00:00") == [order.id]
    assert ids(received_after="2025-05-01T12:30:00", received_before="2025-05-01T14:00") == [
        payment.id
    ]
    assert ids(received_after="2025-05-01T14:00:00+02:00") == [late.id, payment.id, order.id]


def test_it_combines_filters(seeded):
    order, payment, late = seeded
    assert ids(queue="orders.dlq", reason="delivery_limit", status="parked") == [late.id]
    assert ids(queue="orders.dlq", status="discarded") == []


def test_it_ignores_empty_filters(seeded):
    order, payment, late = seeded
    assert ids(queue="", status="", q="", cursor="") == [late.id, payment.id, order.id]


def test_it_filters_by_message_type(seeded):
    order, payment, late = seeded
    assert ids(message_type="orders.tasks.charge") == [late.id]
    assert ids(message_type="orders.tasks") == []  # exact, not a prefix


def test_it_filters_by_vhost(seeded):
    order, payment, late = seeded
    assert ids(vhost="sales") == [late.id]
    assert ids(vhost="/") == [payment.id, order.id]
