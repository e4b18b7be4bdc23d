"""Selections and audit rows in words (dlq/messages/selections.py), shown safely: plain words
escaped, names through `visible` (in <em>), times with their zone ({% at %}), links."""

from datetime import datetime

from django import template
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import mark_safe

from dlq.messages.selections import Link, Name, Words, describe
from dlq.templatetags.dlq_text import visible
from dlq.templatetags.dlq_time import at

register = template.Library()


def _html(part) -> str:
    if isinstance(part, Name):
        return format_html('<em class="named">{}</em>', visible(part, "name"))
    if isinstance(part, datetime):
        return at(part)
    if isinstance(part, Link):
        return format_html('<a href="{}">{}</a>', part.url, part.text)
    return conditional_escape(part)


@register.simple_tag
def words(value: Words):
    """`{% words sentence %}`: Words as HTML."""
    return mark_safe("".join(str(_html(part)) for part in value.parts))


@register.simple_tag
def selection(filters, count=None, chosen=False):
    """`{% selection filters count %}`: a message filter in words (selections.describe)."""
    return words(describe(filters, count, chosen))


@register.filter
def in_words(value: Words) -> str:
    """Plain text, for an attribute or a title: times in UTC."""
    return str(value)
