"""The database itself refuses to change or delete audit rows.

TRUNCATE stays possible for the table's owner (test suites flush with it); a production
deployment that wants more grants the console's role no TRUNCATE on dlq_auditentry.
"""

from django.db import migrations

from dlq.audit import SQLITE_TRIGGERS as SQLITE  # one text, shared with the audit purge

POSTGRES = """
CREATE OR REPLACE FUNCTION dlq_audit_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'dlq_auditentry is append-only: % refused', TG_OP;
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER dlq_audit_append_only BEFORE UPDATE OR DELETE ON dlq_auditentry
    FOR EACH ROW EXECUTE FUNCTION dlq_audit_append_only();
"""


def create(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(POSTGRES, params=None)  # no %-placeholders: % is plpgsql
    elif vendor == "sqlite":
        for statement in SQLITE:
            schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("dlq", "0003_operations")]
    operations = [migrations.RunPython(create, migrations.RunPython.noop)]
