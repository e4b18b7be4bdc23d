from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from dlq.accounts.roles import role_of
from dlq.actions import tokens
from dlq.actions.errors import NotFound

ACTOR = "manage.py"


class Command(BaseCommand):
    help = (
        "Print a new API token for an existing user (shown only this once); --list the tokens"
        " (never the tokens themselves); --revoke ID one at once."
    )

    def add_arguments(self, parser):
        parser.add_argument("username", nargs="?")
        parser.add_argument("--name", default="", help="a label for the token, e.g. the script")
        what = parser.add_mutually_exclusive_group()
        what.add_argument("--list", action="store_true", help="list tokens [of USERNAME]")
        what.add_argument("--revoke", type=int, metavar="ID", help="revoke token ID at once")

    def handle(self, *args, username=None, name="", list=False, revoke=None, **options):
        if list:
            return self._list(username)
        if revoke is not None:
            return self._revoke(revoke, username)
        if not username:
            raise CommandError("name the user: dlq_token USERNAME (or --list, --revoke ID)")
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        if len(name) > 100:
            raise CommandError("--name is at most 100 characters")
        if role_of(user) is None:
            self.stderr.write(f"note: {username} has no role (or is inactive): the API will refuse")
        self.stdout.write(tokens.issue(user, ACTOR, name))

    def _list(self, username):
        rows = [tokens.describe(t) for t in tokens.visible(ACTOR, username)]
        self.stdout.write("id\tuser\tprefix\tcreated\tlast used\tname")
        for row in rows:
            used = row["last_used_at"].isoformat() if row["last_used_at"] else "never"
            self.stdout.write(
                f"{row['id']}\t{row['user']}\t{row['prefix']}…\t"
                f"{row['created_at'].isoformat()}\t{used}\t{row['name']}"
            )

    def _revoke(self, token_id: int, username):
        if username:
            raise CommandError("--revoke takes a token id alone (see --list)")
        try:
            gone = tokens.revoke(token_id, ACTOR)
        except NotFound:
            raise CommandError(f"no token {token_id} (see --list)") from None
        self.stdout.write(f"revoked token {gone['id']} ({gone['prefix']}…) of {gone['user']}")
