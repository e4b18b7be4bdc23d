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


@register.filter
def job_status(job) -> str:
    """A job's status in words: a job done with failed messages says so (the API's status
    stays "done": the contract's set has no other), and a waiting job that waits for its
    operator is "paused"."""
    if job.paused:
        return "paused"
    return "done with failures" if job.status == "done" and job.failed else job.status


@register.simple_tag
def job_badge(job):
    words = job_status(job)
    return badge("done-failures" if words == "done with failures" else job.status, words)
