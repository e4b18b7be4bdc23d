"""The failure groups page's query string."""

from django import forms

from dlq.messages.groups import DEFAULT_WINDOW, WINDOWS


class GroupQuery(forms.Form):
    window = forms.ChoiceField(choices=[(k, k) for k in WINDOWS] + [("all", "all time")],
                               required=False, initial=DEFAULT_WINDOW)  # fmt: skip
    queue = forms.CharField(max_length=255, required=False)
    vhost = forms.CharField(max_length=255, required=False)
    message_type = forms.CharField(max_length=255, required=False)
    exception_type = forms.CharField(max_length=255, required=False)
