"""`python manage.py dlq_setup`: migrate and create the first admin, then exit.

What a deployment runs before the web starts (docker-compose.yml's web service); `make run`
does the same through dlq_up. Safe to run at every start: both steps are idempotent.
"""

from django.core.management.base import BaseCommand

from dlq.management.firstrun import set_up


class Command(BaseCommand):
    help = "Migrate the database and create the first admin if there is none."

    def handle(self, *args, **options):
        for line in set_up():
            self.stdout.write(line)
        self.stdout.write("Database ready.")
