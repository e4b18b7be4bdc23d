"""Untrusted text on every page: `{{ value|visible }}`. A builtin (settings.TEMPLATES), so
no template can show a name, a queue or a reason without it for want of a `{% load %}`."""

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

from dlq.messages.display import right_to_left, visible_parts

register = template.Library()


@register.filter
def visible(value, mode: str = ""):
    """`value` escaped, its hidden characters (controls, bidi controls, bytes that were not
    UTF-8) as marked escapes, and isolated in <bdi> when it writes right to left, so that
    it cannot reorder the page around it. `visible:"block"` is for text in a <pre> (a body,
    a stack trace): it keeps tabs and line ends, and the block isolates it already."""
    if value is None:
        return ""
    text = str(value)
    block = mode == "block"
    html = "".join(
        f'<span class="esc">{escape(piece)}</span>' if hidden else escape(piece)
        for piece, hidden in visible_parts(text, block)
    )
    return mark_safe(f"<bdi>{html}</bdi>" if not block and right_to_left(text) else html)
