"""Untrusted text on every page: `{{ value|visible }}`. A builtin (settings.TEMPLATES), so
no template can show a name, a queue or a reason without it for want of a `{% load %}`."""

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import mark_safe

from dlq.messages import display
from dlq.messages.display import right_to_left, visible_parts

register = template.Library()

# Where a name may wrap: after the dots of a namespace, the colons of a MassTransit urn,
# the $ of a Java inner class, the + of a .NET nested one, the / after a vhost. None of
# these is in what escape() writes (&amp; &lt; &gt; &quot; &#x27;).
NAME_BREAK = re.compile(r"([.:$+/])(?=\S)")


@register.filter
def visible(value, mode: str = ""):
    """`value` escaped, its hidden characters (controls, bidi controls, bytes that were not
    UTF-8) as marked escapes, and isolated in <bdi> when it writes right to left, so that
    it cannot reorder the page around it. `visible:"block"` is for text in a <pre> (a body,
    a stack trace): it keeps tabs and line ends, and the block isolates it already.
    `visible:"name"` is for a type name: it may wrap only after a dot (or : $ + /), so a
    long namespace takes several lines in a narrow column without breaking a word.
    `visible:"title"` is for an attribute (the whole name on hover): plain text."""
    if value is None:
        return ""
    text = str(value)
    if mode == "title":  # an attribute: no markup, the escapes as text (autoescaped)
        return display.visible(text)
    block = mode == "block"
    plain = _breakable if mode == "name" else escape
    html = "".join(
        f'<span class="esc">{escape(piece)}</span>' if hidden else plain(piece)
        for piece, hidden in visible_parts(text, block)
    )
    return mark_safe(f"<bdi>{html}</bdi>" if not block and right_to_left(text) else html)


def _breakable(piece: str) -> str:
    return NAME_BREAK.sub(r"\1<wbr>", str(escape(piece)))
