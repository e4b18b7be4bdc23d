"""Accounts: API tokens, and the identities that sign in through an identity provider or a
trusted proxy."""

from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A bearer token; only its SHA-256 is stored, the token itself is shown once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    name = models.CharField(max_length=100, blank=True, default="")
    prefix = models.CharField(max_length=12)
    token_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.prefix}… ({self.user})"


class IdentitySource(models.TextChoices):
    OIDC = "oidc"
    PROXY = "proxy"


class Identity(models.Model):
    """Who a console user is at an identity provider (issuer and subject) or behind a trusted
    proxy (the user header's value). A user is found by this link only, never by a user
    name or an e-mail address: an IdP account named "admin" is not the local admin."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    source = models.CharField(max_length=8, choices=IdentitySource.choices)
    issuer = models.CharField(max_length=500)  # "" for the proxy
    subject = models.CharField(max_length=255)
    display_name = models.CharField(max_length=255, blank=True, default="")
    groups_json = models.TextField(default="[]")  # as the IdP or proxy last said them
    role = models.CharField(max_length=16, blank=True, default="")  # "" = refused
    first_seen_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["source", "issuer", "subject"], name="dlq_identity_unique"
            )
        ]

    def __str__(self):
        return f"{self.source}:{self.subject}"
