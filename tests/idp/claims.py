"""The claims the IdP gives: profile and email from the user, `groups` from its Django groups
(which directory.py keeps in step with directory.json)."""

from oidc_provider.lib.claims import ScopeClaims

from tests.idp import directory


def groups_of(user) -> list[str]:
    return sorted(user.groups.values_list("name", flat=True))


def userinfo(claims, user):
    """OIDC_USERINFO: the standard claims (the scopes asked for pick among them)."""
    claims.update(
        name=user.get_full_name(),
        given_name=user.first_name,
        family_name=user.last_name,
        preferred_username=user.username,
        email=user.email,
        email_verified=True,
    )
    return claims


class GroupsScopeClaims(ScopeClaims):
    """OIDC_EXTRA_SCOPE_CLAIMS: the scope `groups` gives the claim `groups`."""

    info_groups = ("Groups", "The groups you are a member of.")

    def scope_groups(self):
        return {"groups": groups_of(self.user)}


def add_groups(id_token, user, **kwargs):
    """OIDC_IDTOKEN_PROCESSING_HOOK: `groups` in every ID token, whatever the scopes (unless
    the directory says otherwise)."""
    if directory.options["groups_in_id_token"]:
        id_token["groups"] = groups_of(user)
    else:  # OIDC_IDTOKEN_INCLUDE_CLAIMS put them there if the scope `groups` was asked
        id_token.pop("groups", None)
    return id_token
