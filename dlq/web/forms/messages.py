"""Input of the messages pages: the list's query string (validated exactly as the API's list)
and the operator forms of one message (edit, replay, discard, restore)."""

import base64
import binascii
import json

from django import forms
from pydantic import ValidationError

from dlq.actions.errors import ActionError
from dlq.messages import display
from dlq.schemas.errors import field_errors
from dlq.schemas.filters import MessageFilter, MessageListQuery
from dlq.schemas.values import PropertiesIn, TypedValue, api_names, checked_headers
from dlq.web.forms import header_rows
from dlq.web.forms.replay import TargetForm

FILTER_NAMES = list(MessageFilter.model_fields)
PAGE_SIZE = 50
EDIT_BODY_LIMIT = display.PAGE_LIMIT
BASE64_HELP = (
    "as base64, byte for byte: the body is compressed, is not UTF-8, or holds what a browser's"
    " text box would change or hide (NUL and other control characters, bidi controls that"
    " reorder what is shown, a lone CR, mixed line ends)"
)


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


class ReplayForm(TargetForm, ActionForm):
    """The message page's replay: the shared target fields, then why (not asked by the route
    preview, which reads the same fields)."""

    prefix = "replay"

    def __init__(self, *args, preview: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["reason"].required = not preview


class EditForm(ActionForm):
    """Body, headers and properties (JSON) of a parked message. Only what the operator
    changed is sent to the edit, so an untouched field is never rewritten.

    Headers come as rows of name, type and value (dlq/web/forms/header_rows.py) and as the
    typed JSON of the API, for what rows cannot say; the page sends both (the JSON in a
    <details>, which also serves without JavaScript), and the one that was changed counts."""

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

    ROWS = "h"  # the rows' names: edit-h-0-name, edit-h-0-type, edit-h-0-value, ...

    def __init__(self, message, *args, **kwargs):
        self.message = message
        super().__init__(*args, initial=self.initial_for(message), **kwargs)
        self.rows, self.json_only = header_rows.rows_of(message.headers)
        if self.is_bound and self.has_rows():  # shown again as they were typed
            posted = header_rows.posted_rows(self.data, self.add_prefix(self.ROWS))
            self.rows = [row for row in posted if row.was or row.name or row.text]
        if message.size > EDIT_BODY_LIMIT:  # the page would carry it whole: edit it by the API
            del self.fields["body"], self.fields["body_format"]
            self.body_too_large = True
        elif self.initial["body_format"] == "base64":
            self.fields["body"].help_text = BASE64_HELP

    @staticmethod
    def initial_for(message) -> dict:
        body = bytes(message.body)[: EDIT_BODY_LIMIT + 1]
        text = None if message.content_encoding else _textarea_text(body)
        return {
            "body": text if text is not None else base64.b64encode(body).decode(),
            "body_format": "text" if text is not None else "base64",
            # As the API gives them (a name that is not UTF-8 as base64:...), every hidden
            # character a JSON escape: shown as they are, read back to the same bytes.
            "headers": display.json_text(api_names(message.headers)),
            "properties": display.json_text(message.properties),
        }

    def clean_body(self):
        # Browsers send a textarea's line ends as CRLF: an untouched text body must not change
        # (_textarea_text offers as text only bodies whose line ends are all LF or all CRLF).
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

    def json_changed(self) -> bool:
        """Whether the typed JSON was typed in (the page shows it open again then)."""
        if not self.is_bound:
            return False
        sent = self.data.get(self.add_prefix("headers"), "").replace("\r\n", "\n").strip()
        return sent != self.initial["headers"].strip()

    def has_rows(self) -> bool:
        """Whether the POST carries header rows (the page's form always does)."""
        return bool(self.data.get(self.add_prefix("rows")))

    def clean(self):
        data = super().clean()
        if self.has_rows() and "headers" in data:
            try:
                data["headers"] = self._headers_from_rows_or_json(data["headers"])
            except forms.ValidationError as e:
                self.add_error("headers", e)
        return data

    def _headers_from_rows_or_json(self, from_json: dict) -> dict:
        """The rows' headers, or the JSON's when only the JSON was changed."""
        stored = self.message.headers
        try:
            from_rows = header_rows.read_rows(self.rows, stored)
        except ActionError as e:
            raise forms.ValidationError(list(_lines(e))) from None
        if from_json in (stored, from_rows):
            return from_rows
        if from_rows == stored:
            return from_json
        raise forms.ValidationError(
            "the headers were changed both in the rows and as JSON: change them one way"
            " (the JSON with the rows as they were, or the rows with the JSON as it was)"
        )

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
        """Keyword arguments for actions.edit: only the fields that differ from the message,
        compared as the bytes and values they stand for (a body switched to base64 and back,
        or headers typed again as they were, is no change)."""
        data, changes = self.cleaned_data, {}
        if not self.body_too_large:
            key, body = self._body_edit()
            if _body_bytes(key, body) != bytes(self.message.body):
                changes[key] = body
        if data["headers"] != self.message.headers:
            changes["headers"] = data["headers"]
        if data["properties"] != self.message.properties:
            changes["properties"] = data["properties"]
        return changes

    def _body_edit(self) -> tuple[str, str]:
        body = self.cleaned_data["body"]
        if self.cleaned_data["body_format"] == "text":
            return "body_text", body
        # Base64 pasted in wrapped lines is the same bytes: the line ends are not the body's.
        return "body_base64", "".join(body.split())


# A textarea does not carry every text: the HTML parser turns NUL into U+FFFD and a lone CR
# into LF, and a browser sends every line end as CRLF. The other C0 controls are parse
# errors that browsers may treat alike, and a textarea shows DEL, C1 and bidi controls as
# they are ("total: \u202e0001\u202c" reads "total: 1000"). Such a body is offered as
# base64, byte for byte.


def _textarea_text(body: bytes) -> str | None:
    """The body as text a browser's textarea sends back unchanged, or None."""
    text = display.as_text(body, False)
    if text is None or display.hides(text):
        return None
    crlf = text.count("\r\n")
    if text.count("\r") != crlf or crlf not in (0, text.count("\n")):
        return None  # a lone CR, or CRLF and LF mixed: clean_body could not restore them
    return text


def _body_bytes(key: str, body: str) -> bytes | None:
    """What actions.edit would store for body_text/body_base64 (None: not base64)."""
    if key == "body_text":
        return body.encode("utf-8", "surrogatepass")
    try:
        return base64.b64decode(body, validate=True)
    except binascii.Error:
        return None


def _lines(error: ActionError):
    """The error's problems, one line each; the names in them as a page may show them (a key
    typed as "\\udcff" is a lone surrogate, which no page can encode)."""
    for key, problems in error.errors.items():
        for problem in problems:
            yield display.visible(f"{key}: {problem}")
