"""Tests of dlq/broker/: typed AMQP values through the real broker."""
