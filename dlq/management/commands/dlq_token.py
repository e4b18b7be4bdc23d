from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from dlq.accounts.roles import role_of
from dlq.accounts.tokens import create_token


class Command(BaseCommand):
    help = "Print a new API token for an existing user (it is shown only this once)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="a label for the token, e.g. the script")

    def handle(self, *args, username, name="", **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        if len(name) > 100:
            raise CommandError("--name is at most 100 characters")
        if role_of(user) is None:
            self.stderr.write(f"note: {username} has no role (or is inactive): the API will refuse")
        self.stdout.write(create_token(user, name))
