"""Times on every page: one <time> element, UTC in the markup, local in the browser."""

from datetime import UTC

from django import template
from django.utils.html import format_html

register = template.Library()


@register.simple_tag
def at(value):
    """A moment as <time>, written as the filters read it back: "2025-05-01 12:00:00 UTC".
    static/dlq/localtime.js rewrites the text into the reader's zone, with its offset
    ("2025-05-01 17:30:00 UTC+05:30"), and keeps the UTC time on hover."""
    if value is None:
        return "–"
    utc = value.astimezone(UTC)
    text = f"{utc:%Y-%m-%d %H:%M:%S} UTC"
    return format_html('<time datetime="{}" title="{}">{}</time>', utc.isoformat(), text, text)
