"""Query strings and forms of the bulk review.

The bulk selection takes the message list's filter names and validates them with the API's
own model (schemas.filters.MessageFilter), so the page and the API accept and refuse the same input.
"""

from dataclasses import dataclass, field

from django import forms
from pydantic import ValidationError

from dlq.jobs.control import ACTIONS, MAX_IDS
from dlq.schemas.errors import pydantic_errors
from dlq.schemas.filters import MAX_ID, MessageFilter
from dlq.web.forms.replay import TargetForm

FILTER_NAMES = tuple(MessageFilter.model_fields)
TARGET_PREFIX = "replay"


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


def target_form(request) -> TargetForm:
    """The replay target of a review. A POST carries the target the operator sees on the
    page, and nothing else stands in for it (a POST without one is refused); a look at the
    page takes the one its query names, original when it names none.

    Its fields are prefixed (`replay-target`, `replay-exchange`, `replay-routing_key`, as on
    the message page): the query string also names the selection, whose filters have an
    `exchange` and a `routing_key` of their own."""
    if request.method == "POST":
        return TargetForm(request.POST, prefix=TARGET_PREFIX)
    names = [f"{TARGET_PREFIX}-{name}" for name in TargetForm.base_fields]
    given = {name: request.GET[name] for name in names if name in request.GET}
    return TargetForm(given or {f"{TARGET_PREFIX}-target": "original"}, prefix=TARGET_PREFIX)


class ConfirmForm(forms.Form):
    """The second step of a bulk action: why, and how fast."""

    rate_per_s = forms.IntegerField(
        label="Rate limit (messages per second)", min_value=1, max_value=100_000, required=False,
        help_text="empty: as fast as the broker confirms",
    )  # fmt: skip
    reason = forms.CharField(max_length=2000, widget=forms.Textarea(attrs={"rows": 2}),
                             help_text="kept in the audit trail")  # fmt: skip
    # The second confirmation, asked for (and shown) only when sampled routes fail.
    replay_failing = forms.BooleanField(required=False)


SAFE_ABOVE = 100  # a larger selection is replayed safely (with a canary) by default
SAFE_CANARY = 10


def safe_defaults(count: int, query) -> tuple[dict, str]:
    """The safe-replay fields' initial values for a review of `count` messages, and the line
    saying why. `safe=1` in the query (the group and queue pages' "Safe replay") asks for a
    canary whatever the count."""
    canary = {"canary": SAFE_CANARY}
    if query.get("safe") == "1":
        return canary, f"Safe replay: a canary of {SAFE_CANARY} first, then more each step."
    if count > SAFE_ABOVE:
        return canary, (
            f"More than {SAFE_ABOVE} messages: a canary of {SAFE_CANARY} goes first by default."
            " Empty the canary to replay all in one step."
        )
    return {}, f"{SAFE_ABOVE} messages or fewer: one step by default. Set a canary to go slower."


class SafeReplayForm(forms.Form):
    """A replay's safe-replay fields (contract.md, "Safe bulk replay"), with its defaults
    shown. Its fields are prefixed `safe-`. An empty canary replays everything in one step;
    an empty max returns is 0 with a canary (nothing may come back), no limit without."""

    canary = forms.IntegerField(
        label="Canary (messages first)", min_value=1, required=False,
        help_text="empty: all in one step",
    )  # fmt: skip
    ramp = forms.FloatField(
        label="Ramp (each step this many times the last)", min_value=1.01, max_value=1000,
        initial=2, required=False,
    )  # fmt: skip
    watch_seconds = forms.IntegerField(
        label="Watch each step (seconds)", min_value=0, max_value=86_400, initial=30,
        required=False, help_text="for returns, before the next step",
    )  # fmt: skip
    max_returns = forms.IntegerField(
        label="Abort after more returns than", min_value=0, required=False,
        help_text="empty: 0 with a canary, no limit without",
    )  # fmt: skip
    require_consumers = forms.BooleanField(
        label="Wait until every queue the route reaches has a consumer", required=False,
        initial=True,
    )  # fmt: skip

    def given(self) -> dict:
        """What the operator set, for control.safety (an empty max returns is its default)."""
        return {k: v for k, v in self.cleaned_data.items() if v is not None}
