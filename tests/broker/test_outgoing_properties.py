"""A message built to be published encodes its properties once, and pika still sends them
whole every time (its Header.marshal inserts into the list it is given)."""

from pika import frame

from dlq.broker import amqp, codec

HEADERS = codec.typed_table({"tenant": "t-1", "attempt": 2})


def test_the_encoding_is_kept_and_every_frame_carries_all_of_it():
    props = amqp.make_properties({"content_type": "text/plain", "delivery_mode": 2}, HEADERS)
    fresh = amqp.make_properties({"content_type": "text/plain", "delivery_mode": 2}, HEADERS)
    first = frame.Header(1, 10, props).marshal()  # as the size check, then the publish
    again = frame.Header(1, 10, props).marshal()
    assert first == again == frame.Header(1, 10, fresh).marshal()
    assert props.encode() is not props.encode()  # a copy each time: pika changes the list


def test_pikas_equality_and_repr_do_not_see_the_kept_encoding():
    props = amqp.make_properties({"delivery_mode": 2}, HEADERS)
    fresh = amqp.make_properties({"delivery_mode": 2}, HEADERS)
    props.encode()
    assert props == fresh
    assert repr(props) == repr(fresh)
