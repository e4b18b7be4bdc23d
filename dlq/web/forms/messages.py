"""Input of the messages pages: the list's query string (validated exactly as the API's list)
and the operator forms of one message (edit, replay, discard, restore)."""

import base64
import json

from django import forms
from pydantic import ValidationError

from dlq.actions.message import ActionError
from dlq.messages import display
from dlq.schemas.errors import field_errors
from dlq.schemas.filters import MessageFilter, MessageListQuery
from dlq.schemas.values import PropertiesIn, TypedValue, api_names, checked_headers

FILTER_NAMES = list(MessageFilter.model_fields)
PAGE_SIZE = 50
EDIT_BODY_LIMIT = display.PAGE_LIMIT


def parse_list_query(params) -> tuple[dict, str | None, dict[str, list[str]]]:
    """(filters that are set, cursor, errors) from a query string; the API's names and rules.

    On errors the filters are empty: a page never shows rows for a filter it could not read."""
    given = {name: params.get(name) for name in [*FILTER_NAMES, "cursor"] if name in params}
    try:
        query = MessageListQuery.model_validate({**given, "limit": PAGE_SIZE})
    except ValidationError as e:
        located = [{**error, "loc": ("query", *error["loc"])} for error in e.errors()]
        return {}, None, field_errors(located)
    return query.given(), query.cursor, {}


def filter_values(params) -> dict[str, str]:
    """The filter fields as typed, to put back into the form and into links."""
    return {name: params.get(name, "") for name in FILTER_NAMES}


class ActionForm(forms.Form):
    """A form whose submit calls an action of dlq/actions/message.py; its errors become form
    errors."""

    reason = forms.CharField(max_length=2000, help_text="kept in the audit trail")
    FIELD_OF = {}  # an action's error key (its prefix before ".") -> this form's field

    def add_action_error(self, error: ActionError) -> None:
        for key, problems in error.errors.items():
            field = self.FIELD_OF.get(key.split(".")[0], key.split(".")[0])
            where = field if field in self.fields else None
            for problem in problems:
                text = f"{key}: {problem}" if "." in key else problem
                self.add_error(where, display.visible(text))  # it may name a stored header


class ReasonForm(ActionForm):
    """Discard and restore ask only why."""


TARGETS = [
    ("original", "Original destination"),
    ("failed_queue", "The queue where it failed"),
    ("custom", "Another exchange and routing key"),
]


class ReplayForm(ActionForm):
    prefix = "replay"
    target = forms.ChoiceField(choices=TARGETS, initial="original", widget=forms.RadioSelect)
    exchange = forms.CharField(
        max_length=255, required=False, strip=False, help_text="empty: the default exchange"
    )
    routing_key = forms.CharField(max_length=255, required=False, strip=False)

    def __init__(self, *args, preview: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["reason"].required = not preview

    def target_value(self) -> str | dict:
        """The target as dlq.actions takes it."""
        data = self.cleaned_data
        if data["target"] != "custom":
            return data["target"]
        return {"exchange": data["exchange"], "routing_key": data["routing_key"]}


class EditForm(ActionForm):
    """Body, headers (typed JSON) and properties (JSON) of a parked message. Only what the
    operator changed is sent to the edit, so an untouched field is never rewritten."""

    prefix = "edit"
    body_too_large = False
    BODY_FORMATS = [("text", "Text (UTF-8)"), ("base64", "Base64 (raw bytes)")]
    FIELD_OF = {"body_text": "body", "body_base64": "body"}

    body = forms.CharField(widget=forms.Textarea(attrs={"rows": 12}), required=False,
                           strip=False)  # fmt: skip
    body_format = forms.ChoiceField(choices=BODY_FORMATS, initial="text")
    headers = forms.CharField(widget=forms.Textarea(attrs={"rows": 10}), required=False,
                              help_text="typed JSON, as the API gives them")  # fmt: skip
    properties = forms.CharField(widget=forms.Textarea(attrs={"rows": 6}), required=False,
                                 help_text="JSON, as shown under Properties")  # fmt: skip

    def __init__(self, message, *args, **kwargs):
        self.message = message
        super().__init__(*args, initial=self.initial_for(message), **kwargs)
        if message.size > EDIT_BODY_LIMIT:  # the page would carry it whole: edit it by the API
            del self.fields["body"], self.fields["body_format"]
            self.body_too_large = True

    @staticmethod
    def initial_for(message) -> dict:
        body = bytes(message.body)[: EDIT_BODY_LIMIT + 1]
        text = None if message.content_encoding else display.as_text(body, False)
        return {
            "body": text if text is not None else base64.b64encode(body).decode(),
            "body_format": "text" if text is not None else "base64",
            # As the API gives them (a name that is not UTF-8 as base64:...), every hidden
            # character a JSON escape: shown as they are, read back to the same bytes.
            "headers": display.json_text(api_names(message.headers)),
            "properties": display.json_text(message.properties),
        }

    def clean_body(self):
        # Browsers send a textarea's line ends as CRLF: an untouched text body must not change.
        value, before = self.cleaned_data["body"], self.initial_for(self.message)["body"]
        return value if "\r" in before else value.replace("\r\n", "\n")

    def clean_headers(self):
        value = self._json("headers", self.cleaned_data["headers"])
        try:
            typed = {key: TypedValue(item) for key, item in value.items()}
            return checked_headers(typed)
        except (ValidationError, AttributeError):
            raise forms.ValidationError("must be an object of typed header values") from None
        except ActionError as e:
            raise forms.ValidationError(list(_lines(e))) from None

    def clean_properties(self):
        value = self._json("properties", self.cleaned_data["properties"])
        try:
            return PropertiesIn.model_validate(value).given()
        except ValidationError as e:
            located = [{**err, "loc": ("query", *err["loc"])} for err in e.errors()]
            problems = field_errors(located)
            raise forms.ValidationError(list(_lines(ActionError(problems)))) from None

    def _json(self, name: str, text: str) -> dict:
        try:
            value = json.loads(text or "{}")
        except ValueError as e:
            raise forms.ValidationError(f"is not valid JSON: {e}") from None
        except RecursionError:  # nested deeper than the interpreter's stack
            raise forms.ValidationError("is not valid JSON: nested too deeply") from None
        if not isinstance(value, dict):
            raise forms.ValidationError(f"must be a JSON object of {name}")
        return value

    def changes(self) -> dict:
        """Keyword arguments for actions.edit: only the fields that differ from the message."""
        data, initial = self.cleaned_data, self.initial_for(self.message)
        changes = {}
        body = (data.get("body"), data.get("body_format"))
        if not self.body_too_large and body != (initial["body"], initial["body_format"]):
            key = "body_text" if data["body_format"] == "text" else "body_base64"
            changes[key] = data["body"]
        if data["headers"] != self.message.headers:
            changes["headers"] = data["headers"]
        if data["properties"] != self.message.properties:
            changes["properties"] = data["properties"]
        return changes


def _lines(error: ActionError):
    """The error's problems, one line each; the names in them as a page may show them (a key
    typed as "\\udcff" is a lone surrogate, which no page can encode)."""
    for key, problems in error.errors.items():
        for problem in problems:
            yield display.visible(f"{key}: {problem}")
