"""The out-of-the-box rule "all drained queues" was `*`: every queue when one vhost was
drained. A bare QUEUE now means the default vhost only, so the rule, if nobody changed its
queues, becomes `*/*` and keeps its word once other vhosts are drained. Other rules' bare
patterns keep meaning the default vhost."""

from django.db import migrations

DEFAULT_RULE = "all drained queues"


def every_vhost(apps, schema_editor):
    AlertRule = apps.get_model("dlq", "AlertRule")
    AlertRule.objects.filter(name=DEFAULT_RULE, queues="*").update(queues="*/*")


def default_vhost_only(apps, schema_editor):
    AlertRule = apps.get_model("dlq", "AlertRule")
    AlertRule.objects.filter(name=DEFAULT_RULE, queues="*/*").update(queues="*")


class Migration(migrations.Migration):
    dependencies = [
        ("dlq", "0019_replay_target_audit"),
    ]

    operations = [migrations.RunPython(every_vhost, default_vhost_only)]
