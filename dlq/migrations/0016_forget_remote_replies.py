# Before 0.3.0 an alert attempt's error, and a channel's disabled reason, kept the start of
# what the destination answered, and viewers could read it (it may hold internal data or
# echo a token). Those replies are dropped; the HTTP status stays.
import re

from django.db import migrations

REPLY = re.compile(r"(\w+ answered HTTP \d{3}): .*", re.DOTALL)


def forget(apps, schema_editor):
    for model, field in (("AlertAttempt", "error"), ("AlertChannel", "disabled_reason")):
        Model = apps.get_model("dlq", model)
        rows = Model.objects.filter(**{f"{field}__contains": " answered HTTP "})
        for row in rows.only("pk", field).iterator():
            text = getattr(row, field)
            kept = REPLY.sub(r"\1 (the reply is not kept)", text)
            if kept != text:
                Model.objects.filter(pk=row.pk).update(**{field: kept})


class Migration(migrations.Migration):
    dependencies = [("dlq", "0015_audit_tokens_mutes_sign_ins")]
    operations = [migrations.RunPython(forget, migrations.RunPython.noop)]
