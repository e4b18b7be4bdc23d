"""Audit retention through one narrow, audited path that the console's own role can use
without being able to bypass the append-only trigger (PostgreSQL).

`dlq_purge_audit(cutoff, batch)` deletes the oldest audit rows before `cutoff` (at most
`batch` of them) and records the purge as an audit row of its own. It refuses a cutoff
younger than the retention in `dlq_auditretention` (one row; NULL, the default, refuses
every purge), which only the tables' owner may change. It runs as that owner (SECURITY
DEFINER), and the trigger lets a DELETE through only inside it. A deployment whose web,
worker and drainer connect as another role (`manage.py dlq_grants ROLE`) leaves that role no
way to delete, truncate, alter or bypass the trigger, nor to purge rows younger than the
owner allows.
"""

from django.db import migrations

POSTGRES = """
CREATE TABLE {schema}.dlq_auditretention (
    id integer PRIMARY KEY CHECK (id = 1),
    days integer CHECK (days IS NULL OR days >= 1)
);
INSERT INTO {schema}.dlq_auditretention (id, days) VALUES (1, NULL);

CREATE OR REPLACE FUNCTION {schema}.dlq_audit_append_only() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE'
       AND current_setting('dlq.audit_purge', true) = 'on'
       AND current_user = (SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = TG_RELID)
    THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'dlq_auditentry is append-only: % refused', TG_OP;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION {schema}.dlq_purge_audit(cutoff timestamptz, batch integer)
RETURNS integer SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    kept integer;
    purged integer;
BEGIN
    IF batch IS NULL OR batch < 1 OR batch > 100000 THEN
        RAISE EXCEPTION 'dlq_purge_audit: batch must be 1 to 100000';
    END IF;
    SELECT days INTO kept FROM {schema}.dlq_auditretention WHERE id = 1;
    IF kept IS NULL THEN
        RAISE EXCEPTION 'dlq_purge_audit: audit retention is off (dlq_auditretention.days)';
    END IF;
    IF cutoff IS NULL OR cutoff > now() - make_interval(days => kept) THEN
        RAISE EXCEPTION 'dlq_purge_audit: rows younger than % days are kept', kept;
    END IF;
    PERFORM set_config('dlq.audit_purge', 'on', true);
    DELETE FROM {schema}.dlq_auditentry WHERE id IN (
        SELECT id FROM {schema}.dlq_auditentry WHERE at < cutoff ORDER BY id LIMIT batch);
    GET DIAGNOSTICS purged = ROW_COUNT;
    PERFORM set_config('dlq.audit_purge', 'off', true);
    IF purged > 0 THEN
        INSERT INTO {schema}.dlq_auditentry (at, actor_id, actor_name, action,
            message_ids_json, job_id, reason, diff_json, detail, request_id)
        VALUES (now(), NULL, 'retention', 'audit_purge', '[]', NULL,
                'DLQ_AUDIT_RETENTION_DAYS', '',
                json_build_object('purged', purged, 'before', cutoff)::text, '');
    END IF;
    RETURN purged;
END;
$$ LANGUAGE plpgsql;
REVOKE ALL ON FUNCTION {schema}.dlq_purge_audit(timestamptz, integer) FROM PUBLIC;
"""


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT quote_ident(current_schema())")
        schema = cursor.fetchone()[0]
    # No %-placeholders: % is plpgsql's. The schema is named once, so that the SECURITY
    # DEFINER function needs no writable schema on its search path.
    schema_editor.execute(POSTGRES.format(schema=schema), params=None)


class Migration(migrations.Migration):
    dependencies = [("dlq", "0016_forget_remote_replies")]
    operations = [migrations.RunPython(create, migrations.RunPython.noop)]
