"""`python manage.py dlq_setup`: migrate and create the first admin, then exit.

What a deployment runs before the web starts (docker-compose.yml's web service); `make run`
does the same through dlq_up. Safe to run at every start: both steps are idempotent.
"""

from django.core.management import call_command
from django.core.management.base import BaseCommand

from dlq.firstrun import ensure_admin


class Command(BaseCommand):
    help = "Migrate the database and create the first admin if there is none."

    def handle(self, *args, **options):
        call_command("migrate", verbosity=0)
        password = ensure_admin()
        if password:
            self.stdout.write(f"First admin created: user 'admin', password '{password}'")
            self.stdout.write("(shown once; set DLQ_ADMIN_PASSWORD to choose it)")
        self.stdout.write("Database ready.")
