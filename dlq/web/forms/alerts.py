"""Forms of the alert pages. Secrets are typed in and never rendered back."""

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django import forms
from django.utils import timezone

from dlq.alerts import mutes, patterns
from dlq.models import AlertRule, ChannelKind, Mute

SECRET_FIELDS = {
    ChannelKind.SLACK: {"url": "Slack incoming webhook URL"},
    ChannelKind.WEBHOOK: {"url": "Webhook URL"},
    ChannelKind.TELEGRAM: {"token": "Bot token", "chat_id": "Chat id"},
}


class SecretInput(forms.TextInput):
    """Renders no value: neither the stored secret nor one just typed into a form with
    errors comes back in the HTML."""

    def __init__(self):
        super().__init__(attrs={"autocomplete": "off", "spellcheck": "false"})

    def format_value(self, value):
        return None


class ChannelForm(forms.Form):
    """One channel kind's fields. Editing: an empty secret field keeps the stored value."""

    name = forms.CharField(
        max_length=100, required=False, help_text="optional; defaults to the kind"
    )

    def __init__(self, kind: str, *args, editing: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        keep = "leave empty to keep the stored value"
        for field, label in SECRET_FIELDS[kind].items():
            self.fields[field] = forms.CharField(
                label=label,
                max_length=2000,
                required=not editing,
                widget=SecretInput(),
                help_text=keep if editing else "",
            )
        if editing:
            self.fields["name"].help_text = ""


class AttemptQuery(forms.Form):
    channel = forms.IntegerField(required=False, min_value=1)
    before = forms.IntegerField(required=False, min_value=1)


QUEUES_HELP = (
    "queue names or globs, comma-separated: QUEUE in the default vhost, or"
    " VHOST/QUEUE (a / inside a vhost name is %2F); */* is every vhost's queues"
)


class RuleForm(forms.ModelForm):
    """AlertRule.clean() checks the queues, the quiet hours and the time zone."""

    class Meta:
        model = AlertRule
        fields = [
            "name",
            "enabled",
            "queues",
            "all_channels",
            "channels",
            "threshold",
            "window_minutes",
            "digest_minutes",
            "alert_new_groups",
            "quiet_start",
            "quiet_end",
            "quiet_tz",
        ]
        widgets = {
            "queues": forms.Textarea(attrs={"rows": 2}),
            "channels": forms.CheckboxSelectMultiple,
            "quiet_start": forms.TimeInput(attrs={"type": "time"}),
            "quiet_end": forms.TimeInput(attrs={"type": "time"}),
        }
        help_texts = {"queues": QUEUES_HELP}

    def clean_queues(self):
        value = self.cleaned_data["queues"]
        found = patterns.pattern_errors(AlertRule(queues=value).patterns)
        if found:
            raise forms.ValidationError(found)
        return value


class MuteForm(forms.ModelForm):
    """ "Until" is typed in the operator's zone: the page's script puts the browser's zone in
    the hidden `tz` field and names it under the form (UTC without the script)."""

    reason = forms.CharField(max_length=2000, help_text="kept in the audit trail")
    tz = forms.CharField(required=False, max_length=64, widget=forms.HiddenInput)

    class Meta:
        model = Mute
        fields = ["queue", "group", "until", "reason"]
        widgets = {"until": forms.DateTimeInput(attrs={"type": "datetime-local"})}
        help_texts = {
            "group": "failure group id",
            "until": "in the time zone named below",
            "queue": "QUEUE in the default vhost or VHOST/QUEUE, globs allowed",
        }

    def full_clean(self):
        # Django reads a time without an offset in the current zone: make that the operator's.
        with timezone.override(self.zone()):
            super().full_clean()

    def zone(self) -> ZoneInfo | None:
        """The zone the form was filled in; None (UTC, the default zone) when none or unknown."""
        try:
            return ZoneInfo(self.data.get("tz") or "UTC")
        except (ZoneInfoNotFoundError, ValueError):
            return None

    def clean_tz(self):
        value = self.cleaned_data["tz"]
        if value and self.zone() is None:
            raise forms.ValidationError("must be an IANA time zone such as Europe/Berlin")
        return value

    def clean(self):
        data = super().clean()
        data.pop("tz", None)  # how "until" was read, not part of the mute
        found = mutes.problems(data.get("until"), data.get("reason", "x"),
                               data.get("queue", ""), data.get("group", ""))  # fmt: skip
        for field, problem in found.items():
            self.add_error(field, problem)
        return data
