"""The admin's forms for users and API tokens: every refusal is a form error, never a 500."""

import secrets

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.validators import UnicodeUsernameValidator

from dlq.accounts.roles import ROLES

SIGN_IN = [
    ("password", "Password: the user signs in with the password you give them"),
    ("none", "No password: the user acts only through API tokens (a service account)"),
]

NEW_PASSWORD = forms.PasswordInput(attrs={"autocomplete": "new-password"})


class UserForm(forms.Form):
    username = forms.CharField(max_length=150, validators=[UnicodeUsernameValidator()],
                               help_text="letters, digits and @ . + - _ only")  # fmt: skip
    role = forms.ChoiceField(choices=[(r, r) for r in ROLES], initial=ROLES[0])
    sign_in = forms.ChoiceField(label="Sign-in", choices=SIGN_IN, initial="password",
                                widget=forms.RadioSelect)  # fmt: skip
    password = forms.CharField(label="Initial password", required=False, strip=False,
                               widget=NEW_PASSWORD)  # fmt: skip
    password2 = forms.CharField(label="Password again", required=False, strip=False,
                                widget=NEW_PASSWORD)  # fmt: skip

    def clean_username(self):
        name = self.cleaned_data["username"]
        if get_user_model().objects.filter(username__iexact=name).exists():
            raise forms.ValidationError(f"A user named {name} exists.")
        return name

    def clean(self):
        data = super().clean()
        if data.get("sign_in") != "password":
            data["password"] = None
            return data
        password, again = data.get("password") or "", data.get("password2") or ""
        if not password:
            self.add_error("password", "Give an initial password, or choose “No password”.")
        elif password != again:
            self.add_error("password2", "The two passwords differ.")
        else:
            probe = get_user_model()(username=data.get("username", ""))
            try:
                validate_password(password, probe)
            except forms.ValidationError as e:
                self.add_error("password", e)
        return data


class TokenForm(forms.Form):
    user = forms.ModelChoiceField(
        queryset=get_user_model().objects.filter(is_active=True).order_by("username"),
        label="For user",
        help_text="the token acts with this user's role; for a script, make a user with "
        "no password and the role it needs",
    )
    name = forms.CharField(max_length=100, required=False,
                           help_text="what it is for (e.g. ci-replays)")  # fmt: skip
    # Names this filling-in of the form, so that a reload of the page that showed the token
    # (which sends the form again) is told so instead of making a second token.
    once = forms.CharField(required=False, max_length=64, widget=forms.HiddenInput,
                           initial=lambda: secrets.token_urlsafe(16))  # fmt: skip
