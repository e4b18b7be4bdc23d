"""The topology page's forms: acknowledging a warning, and withdrawing that, each with a reason."""

from django import forms


class AcknowledgementForm(forms.Form):
    """Names the warning (hidden: the row it is in) and says why."""

    vhost = forms.CharField(max_length=255, strip=False, widget=forms.HiddenInput)
    queue = forms.CharField(max_length=255, strip=False, widget=forms.HiddenInput)
    check_name = forms.CharField(max_length=32, widget=forms.HiddenInput)
    reason = forms.CharField(max_length=2000, help_text="kept in the audit trail")
