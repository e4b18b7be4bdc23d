"""Times on every page: one <time> element, UTC in the markup, local in the browser."""

from datetime import UTC

from django import template
from django.utils.html import format_html

register = template.Library()


@register.simple_tag
def at(value):
    """A moment as <time>: UTC in the text and on hover; static/dlq/localtime.js rewrites
    the text into the reader's time zone and keeps UTC in the title."""
    if value is None:
        return "–"
    utc = value.astimezone(UTC)
    text = f"{utc:%Y-%m-%d %H:%M:%S} UTC"
    return format_html('<time datetime="{}" title="{}">{}</time>', utc.isoformat(), text, text)
