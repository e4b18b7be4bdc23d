"""Print the SQL that lets a PostgreSQL role run the console without owning its tables."""

import re

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

ROLE = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def grants(role: str, database: str) -> list[str]:
    """What the web, the workers and the drainer need, and no more: rows of every table,
    never UPDATE, DELETE or TRUNCATE on the audit trail (its trigger refuses them anyway),
    nor a say in how old audit rows must be to go (dlq_auditretention, the owner's), and the
    one audited way to purge them. Owning nothing, the role cannot alter
    a table or its trigger; not a superuser, it cannot set session_replication_role."""
    return [
        f'GRANT CONNECT ON DATABASE "{database}" TO {role};',
        f"GRANT USAGE ON SCHEMA public TO {role};",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role};",
        f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO {role};",
        f"REVOKE UPDATE, DELETE, TRUNCATE ON dlq_auditentry FROM {role};",
        f"REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON dlq_auditretention FROM {role};",
        f"GRANT EXECUTE ON FUNCTION dlq_purge_audit(timestamptz, integer) TO {role};",
    ]


class Command(BaseCommand):
    help = (
        "Print GRANT statements for a PostgreSQL role (LOGIN, not the tables' owner) that the"
        " web, workers and drainer connect as; run them as the owner after every migrate."
    )

    def add_arguments(self, parser):
        parser.add_argument("role", help="the role the console's processes connect as")

    def handle(self, *args, role, **options):
        if connection.vendor != "postgresql":
            raise CommandError("roles are PostgreSQL's: the embedded SQLite has none")
        if not ROLE.fullmatch(role):
            raise CommandError("a role name is lowercase letters, digits and _ (max 63)")
        for statement in grants(role, connection.settings_dict["NAME"]):
            self.stdout.write(statement)
