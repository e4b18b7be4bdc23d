"""Query strings and forms of the bulk review.

The bulk selection takes the message list's filter names and validates them with the API's
own model (schemas.filters.MessageFilter), so the page and the API accept and refuse the same input.
"""

from dataclasses import dataclass, field

from django import forms
from pydantic import ValidationError

from dlq.actions.jobs import ACTIONS, MAX_IDS
from dlq.schemas.errors import pydantic_errors
from dlq.schemas.filters import MAX_ID, MessageFilter

FILTER_NAMES = tuple(MessageFilter.model_fields)
TARGET_NAMES = ("target", "exchange", "routing_key")


@dataclass
class Selection:
    """What a bulk review is about: an action and either ids or a filter."""

    action: str = ""
    ids: list[int] | None = None
    filters: dict | None = None
    errors: dict[str, list[str]] = field(default_factory=dict)

    def params(self) -> list[tuple[str, str]]:
        """The query string pairs that name this selection again (for hidden inputs)."""
        pairs = [("action", self.action)]
        if self.ids is not None:
            return pairs + [("id", str(i)) for i in self.ids]
        return pairs + [("all", "1")] + [(k, _text(v)) for k, v in self.filters.items()]


def _text(value) -> str:
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _ids(values: list[str], errors: dict) -> list[int] | None:
    if not values or len(values) > MAX_IDS:
        errors["id"] = [f"give 1 to {MAX_IDS} message ids"]
        return None
    # isascii: "²" is a digit to isdigit(), and not to int().
    if not all(v.isascii() and v.isdigit() and 0 < int(v) <= MAX_ID for v in values):
        errors["id"] = ["message ids are positive whole numbers"]
        return None
    return list(dict.fromkeys(int(v) for v in values))


def _filters(query, errors: dict) -> dict | None:
    try:
        given = MessageFilter.model_validate({k: query.get(k) for k in FILTER_NAMES if k in query})
    except ValidationError as e:
        errors.update(pydantic_errors(e))
        return None
    return given.given()


def parse_selection(query) -> Selection:
    """The action and the messages of a bulk review, from its query string."""
    selection = Selection(action=query.get("action", ""))
    errors = selection.errors
    if selection.action not in ACTIONS:
        errors["action"] = [f"must be one of {', '.join(ACTIONS)}"]
    ids, everything = query.getlist("id"), query.get("all")
    if ids and everything:
        errors["id"] = ["give either message ids or all=1 with filters, not both"]
    elif everything == "1":
        selection.filters = _filters(query, errors)
    elif everything is not None:
        errors["all"] = ["must be 1"]
    elif ids:
        selection.ids = _ids(ids, errors)
    else:
        errors["id"] = ["choose messages: give message ids, or all=1 with the list's filters"]
    return selection


class TargetForm(forms.Form):
    """Where a bulk replay sends the messages; read from the review's query string."""

    target = forms.ChoiceField(
        choices=[
            ("original", "Original exchange and routing key"),
            ("failed_queue", "The queue where it failed"),
            ("custom", "An exchange and routing key"),
        ],
        initial="original",
        widget=forms.RadioSelect,
    )
    exchange = forms.CharField(max_length=255, required=False, strip=False,
                               help_text='empty for the default exchange ("")')  # fmt: skip
    routing_key = forms.CharField(max_length=255, required=False, strip=False)

    def __init__(self, query):
        data = {k: query[k] for k in TARGET_NAMES if k in query} or {"target": "original"}
        super().__init__(data)

    def clean(self):
        data = super().clean()
        custom = data.get("target") == "custom"
        if not custom and (data.get("exchange") or data.get("routing_key")):
            raise forms.ValidationError("exchange and routing key apply to a custom target only")
        return data

    def value(self) -> str | dict:
        """The target as jobs.create_job takes it."""
        data = self.cleaned_data
        if data["target"] != "custom":
            return data["target"]
        return {"exchange": data["exchange"], "routing_key": data["routing_key"]}


class ConfirmForm(forms.Form):
    """The second step of a bulk action: why, and how fast."""

    rate_per_s = forms.IntegerField(
        label="Rate limit (messages per second)", min_value=1, max_value=100_000, required=False,
        help_text="empty: as fast as the broker confirms",
    )  # fmt: skip
    reason = forms.CharField(max_length=2000, widget=forms.Textarea(attrs={"rows": 2}),
                             help_text="kept in the audit trail")  # fmt: skip
