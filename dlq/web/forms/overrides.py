"""The replay overrides page's form: a pattern, where its "original" replays go, and why."""

from django import forms


class OverrideForm(forms.Form):
    queue_pattern = forms.CharField(
        max_length=255,
        help_text="a queue name or a glob (orders.*) in the default vhost, or VHOST/QUEUE "
        "(billing/orders.*; a / in a vhost name is %2F)",
    )
    exchange = forms.CharField(max_length=255, required=False, strip=False,
                               help_text="empty: the default exchange")  # fmt: skip
    routing_key = forms.CharField(max_length=255, required=False, strip=False)
    reason = forms.CharField(max_length=2000, help_text="kept in the audit trail")


class DeleteForm(forms.Form):
    reason = forms.CharField(max_length=2000, help_text="kept in the audit trail")
