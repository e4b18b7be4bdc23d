"""Where a replay goes: the target fields of the message page's replay form and of the bulk
review, one set of choices and labels for both."""

from django import forms

TARGETS = [
    ("original", "Original destination"),
    ("failed_queue", "The queue where it failed"),
    ("custom", "Another exchange and routing key"),
]


class TargetForm(forms.Form):
    """A replay's target, as the contract takes it: "original", "failed_queue", or an
    exchange and routing key (only with "custom", so a stale exchange left in the field
    never changes where a replay goes unnoticed)."""

    target = forms.ChoiceField(choices=TARGETS, initial="original", widget=forms.RadioSelect)
    exchange = forms.CharField(
        max_length=255, required=False, strip=False, help_text="empty: the default exchange"
    )
    routing_key = forms.CharField(max_length=255, required=False, strip=False)
    # Shown by the route preview only when the route reaches a queue the console drains.
    allow_drained = forms.BooleanField(
        required=False,
        label="Replay into a queue the console drains anyway",
        help_text="Only when that loop is what you want; the audit trail keeps that you chose it.",
    )

    def clean(self):
        data = super().clean()
        custom = data.get("target") == "custom"
        if not custom and (data.get("exchange") or data.get("routing_key")):
            raise forms.ValidationError("exchange and routing key apply to a custom target only")
        return data

    def allows_drained(self) -> bool:
        return bool(self.cleaned_data.get("allow_drained"))

    def target_value(self) -> str | dict:
        """The target as dlq.actions takes it."""
        data = self.cleaned_data
        if data["target"] != "custom":
            return data["target"]
        return {"exchange": data["exchange"], "routing_key": data["routing_key"]}


def destination(target: str | dict) -> str:
    """Where a replay to `target` sends, in the words of a button: "to the failed queue"."""
    if target == "original":
        return "to the original destination"
    if target == "failed_queue":
        return "to the failed queue"
    exchange = f"exchange {target['exchange']}" if target["exchange"] else "the default exchange"
    return f"to {exchange} with routing key {target['routing_key']}"
