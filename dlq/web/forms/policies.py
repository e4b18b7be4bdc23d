"""The policies page's form: a redrive policy as fields (the match one field per key); the
values are checked by the API's schema (dlq/schemas/policies.py), one validator for both."""

from django import forms

from dlq.models.redrive import MATCH_FIELDS


class PolicyForm(forms.Form):
    name = forms.CharField(max_length=150)
    enabled = forms.BooleanField(required=False, initial=True)
    match_vhost = forms.CharField(max_length=255, required=False, label="Match vhost")
    match_queue = forms.CharField(max_length=255, required=False, label="Match queue")
    match_group = forms.CharField(max_length=16, required=False, label="Match group")
    match_message_type = forms.CharField(max_length=255, required=False,
                                         label="Match message type")  # fmt: skip
    match_exception_type = forms.CharField(max_length=255, required=False,
                                           label="Match exception type")  # fmt: skip
    match_reason = forms.CharField(max_length=32, required=False, label="Match death reason",
                                   help_text="exact values; at least one of the six")  # fmt: skip
    target = forms.ChoiceField(choices=[("original", "original"),
                                        ("failed_queue", "failed queue")])  # fmt: skip
    delay_seconds = forms.IntegerField(
        min_value=1, initial=30, help_text="the first redrive this long after arrival"
    )
    backoff = forms.FloatField(
        min_value=1, initial=2, help_text="each later attempt waits this many times longer"
    )
    max_attempts = forms.IntegerField(min_value=1, initial=3)
    rate_per_s = forms.FloatField(required=False, help_text="empty: no limit")
    require_consumers = forms.BooleanField(required=False, initial=True)
    trip_returns = forms.IntegerField(min_value=1, initial=10)
    trip_window_seconds = forms.IntegerField(min_value=1, initial=300)
    reason = forms.CharField(max_length=2000, required=False, help_text="kept in the audit trail")

    def values(self) -> dict:
        """The cleaned fields in the API's shape."""
        data = dict(self.cleaned_data)
        data["match"] = {k: data.pop(f"match_{k}") for k in MATCH_FIELDS if data.get(f"match_{k}")}
        for k in MATCH_FIELDS:
            data.pop(f"match_{k}", None)
        return data


def initial(described: dict) -> dict:
    """A policy as the API describes it, as the form's fields."""
    values = {k: v for k, v in described.items() if k not in ("id", "state", "match")}
    return {**values, **{f"match_{k}": v for k, v in described["match"].items()}}
