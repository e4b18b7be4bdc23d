"""Queues as a reader meets them: bare in vhost `/`, `vhost/queue` in any other vhost."""

from django import template

from dlq.broker import names

register = template.Library()


@register.filter
def qualified(vhost, queue):
    """`{{ m.vhost|qualified:m.queue }}`; an empty queue (no failed queue) stays empty, and
    the template escapes the result like any other value."""
    if not queue:
        return ""
    return names.qualified(vhost or "/", queue)
