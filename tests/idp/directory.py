"""directory.json stands in for the company directory (LDAP, SCIM): before each request the
IdP reads it and, when its content changed, makes its users and clients match it.

{"users": [{"username", "password", "name", "email", "groups": [...]}],
 "clients": [{"client_id", "client_secret", "redirect_uris": [...],
              "post_logout_redirect_uris": [...]}],
 "groups_in_id_token": true}

With "groups_in_id_token": false, only userinfo gives the groups (scope `groups`), as many
providers do by default.
"""

import json
import threading

from django.conf import settings
from django.contrib.auth.models import Group, User
from django.db import transaction
from oidc_provider.models import Client, ResponseType

_lock = threading.Lock()
_seen: bytes | None = None
options = {"groups_in_id_token": True}


class DirectoryMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        refresh()
        return self.get_response(request)


def refresh() -> None:
    """Sync when the file's content differs from the last one synced (content, not mtime:
    two writes within one mtime tick are told apart; the file is small)."""
    global _seen
    path = settings.DIR / "directory.json"
    with _lock:
        content = path.read_bytes() if path.exists() else b'{"users": [], "clients": []}'
        if content != _seen:
            directory = json.loads(content)
            sync(directory)
            options["groups_in_id_token"] = directory.get("groups_in_id_token", True)
            _seen = content


@transaction.atomic
def sync(directory: dict) -> None:
    users = directory.get("users", [])
    User.objects.exclude(username__in=[u["username"] for u in users]).delete()
    for entry in users:
        first, _, last = entry.get("name", "").partition(" ")
        user, _ = User.objects.update_or_create(
            username=entry["username"],
            defaults={"first_name": first, "last_name": last, "email": entry.get("email", "")},
        )
        # Only when it changed: a new hash would end the user's IdP session.
        if not user.check_password(entry["password"]):
            user.set_password(entry["password"])
            user.save(update_fields=["password"])
        user.groups.set([Group.objects.get_or_create(name=g)[0] for g in entry.get("groups", [])])
    Group.objects.filter(user=None).delete()

    clients = directory.get("clients", [])
    Client.objects.exclude(client_id__in=[c["client_id"] for c in clients]).delete()
    code = ResponseType.objects.get(value="code")  # the migrations create the types
    for entry in clients:
        client, _ = Client.objects.get_or_create(client_id=entry["client_id"])
        client.name = entry["client_id"]
        client.client_type = "confidential"
        client.client_secret = entry["client_secret"]
        client.jwt_alg = "RS256"
        client.require_consent = False  # no consent screen, ever
        client.redirect_uris = entry["redirect_uris"]
        client.post_logout_redirect_uris = entry.get("post_logout_redirect_uris", [])
        client.save()
        client.response_types.set([code])
