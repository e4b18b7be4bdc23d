"""One status badge for every page: message and job statuses, replay and alert outcomes."""

from django import template
from django.utils.html import format_html

register = template.Library()


@register.simple_tag
def badge(value, label=None, element_id=None):
    """`value` names the colour class (`badge-parked`, `badge-done`...): every status set is
    fixed by the models, and the value is escaped anyway."""
    if element_id:
        return format_html('<span class="badge badge-{}" id="{}">{}</span>', value, element_id,
                           label or value)  # fmt: skip
    return format_html('<span class="badge badge-{}">{}</span>', value, label or value)
