# Alerts (issue 3): channels, rules, mutes, and the alert engine's state; plus the default
# rule and the starting point of alert counting (arrivals stored before this migration are
# history, not news: they neither alert nor count as new failure groups).

import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models

DEFAULT_RULE = "all drained queues"


def _last_allocated_id(Message, connection) -> int:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_sequence_last_value(pg_get_serial_sequence(%s, 'id'))",
                [Message._meta.db_table],
            )
            return cursor.fetchone()[0] or 0
    return Message.objects.aggregate(top=models.Max("id"))["top"] or 0


def create_defaults(apps, schema_editor):
    Message = apps.get_model("dlq", "Message")
    KnownGroup = apps.get_model("dlq", "KnownGroup")
    start = _last_allocated_id(Message, schema_editor.connection)
    apps.get_model("dlq", "ArrivalHorizon").objects.get_or_create(
        id=1, defaults={"safe_id": start}
    )
    firsts = Message.objects.values("group").annotate(first=models.Min("id")).order_by()
    KnownGroup.objects.bulk_create(
        [
            KnownGroup(group=f["group"], first_id=f["first"], first_seen_at=django.utils.timezone.now())
            for f in firsts.iterator()
        ],
        ignore_conflicts=True,
        batch_size=1000,
    )
    apps.get_model("dlq", "AlertRule").objects.get_or_create(
        name=DEFAULT_RULE,
        defaults={
            "queues": "*",
            "all_channels": True,
            "threshold": 1,
            "window_minutes": 5,
            "digest_minutes": 15,
            "alert_new_groups": True,
            "cursor": start,
        },
    )


class Migration(migrations.Migration):

    dependencies = [
        ("dlq", "0004_audit_append_only"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='AlertChannel',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('slack', 'Slack'), ('telegram', 'Telegram'), ('webhook', 'Webhook')], max_length=16)),
                ('name', models.CharField(max_length=100, unique=True)),
                ('config', models.JSONField(default=dict)),
                ('enabled', models.BooleanField(default=True)),
                ('disabled_reason', models.TextField(blank=True, default='')),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
        ),
        migrations.CreateModel(
            name='ArrivalHorizon',
            fields=[
                ('id', models.PositiveSmallIntegerField(default=1, primary_key=True, serialize=False)),
                ('safe_id', models.BigIntegerField(default=0)),
                ('watch_top', models.BigIntegerField(blank=True, null=True)),
                ('watch_since', models.DateTimeField(blank=True, null=True)),
            ],
        ),
        migrations.CreateModel(
            name='KnownGroup',
            fields=[
                ('group', models.CharField(max_length=16, primary_key=True, serialize=False)),
                ('first_id', models.BigIntegerField()),
                ('first_seen_at', models.DateTimeField()),
            ],
        ),
        migrations.CreateModel(
            name='TokenBucket',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('key', models.CharField(max_length=80, unique=True)),
                ('tokens', models.FloatField(default=1.0)),
                ('updated_at', models.DateTimeField()),
            ],
        ),
        migrations.CreateModel(
            name='AlertRule',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(max_length=100, unique=True)),
                ('queues', models.TextField(default='*', help_text='queue names or globs, comma-separated')),
                ('all_channels', models.BooleanField(default=False, help_text='every enabled channel')),
                ('threshold', models.PositiveIntegerField(default=1)),
                ('window_minutes', models.PositiveIntegerField(default=5)),
                ('digest_minutes', models.PositiveIntegerField(default=15)),
                ('alert_new_groups', models.BooleanField(default=True)),
                ('quiet_start', models.TimeField(blank=True, null=True)),
                ('quiet_end', models.TimeField(blank=True, null=True)),
                ('quiet_tz', models.CharField(default='UTC', max_length=64)),
                ('enabled', models.BooleanField(default=True)),
                ('cursor', models.BigIntegerField(default=0)),
                ('last_sent_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
                ('channels', models.ManyToManyField(blank=True, related_name='rules', to='dlq.alertchannel')),
            ],
        ),
        migrations.CreateModel(
            name='AlertDigest',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('opened_at', models.DateTimeField()),
                ('first_id', models.BigIntegerField()),
                ('last_id', models.BigIntegerField()),
                ('first_received_at', models.DateTimeField()),
                ('last_received_at', models.DateTimeField()),
                ('count', models.BigIntegerField(default=0)),
                ('queues', models.JSONField(default=dict)),
                ('groups', models.JSONField(default=dict)),
                ('other_groups', models.BigIntegerField(default=0)),
                ('new_groups', models.JSONField(default=list)),
                ('minutes', models.JSONField(default=dict)),
                ('triggered_at', models.DateTimeField(blank=True, null=True)),
                ('sent_at', models.DateTimeField(blank=True, null=True)),
                ('reason', models.CharField(blank=True, default='', max_length=16)),
                ('rule', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='digests', to='dlq.alertrule')),
            ],
        ),
        migrations.CreateModel(
            name='AlertAttempt',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('channel_name', models.CharField(max_length=100)),
                ('kind', models.CharField(max_length=16)),
                ('try_no', models.PositiveSmallIntegerField(default=1)),
                ('status', models.CharField(choices=[('queued', 'Queued'), ('sending', 'Sending'), ('sent', 'Sent'), ('failed', 'Failed'), ('rejected', 'Rejected'), ('rate_limited', 'Rate Limited'), ('skipped', 'Skipped')], default='queued', max_length=16)),
                ('not_before', models.DateTimeField()),
                ('created_at', models.DateTimeField()),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('http_status', models.PositiveSmallIntegerField(blank=True, null=True)),
                ('error', models.TextField(blank=True, default='')),
                ('summary', models.CharField(blank=True, default='', max_length=255)),
                ('channel', models.ForeignKey(null=True, on_delete=django.db.models.deletion.SET_NULL, to='dlq.alertchannel')),
                ('digest', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to='dlq.alertdigest')),
                ('rule', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to='dlq.alertrule')),
            ],
        ),
        migrations.CreateModel(
            name='Mute',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('queue', models.CharField(blank=True, default='', max_length=255)),
                ('group', models.CharField(blank=True, default='', max_length=16)),
                ('until', models.DateTimeField()),
                ('reason', models.TextField(blank=True, default='')),
                ('created_by_name', models.CharField(blank=True, default='', max_length=150)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
            ],
        ),
        migrations.AddConstraint(
            model_name='alertrule',
            constraint=models.CheckConstraint(condition=models.Q(('digest_minutes__gte', 1), ('threshold__gte', 1), ('window_minutes__gte', 1)), name='alertrule_positive'),
        ),
        migrations.AddConstraint(
            model_name='alertdigest',
            constraint=models.UniqueConstraint(condition=models.Q(('sent_at__isnull', True)), fields=('rule',), name='alertdigest_one_open_per_rule'),
        ),
        migrations.AddIndex(
            model_name='alertattempt',
            index=models.Index(fields=['channel', '-id'], name='attempt_channel_id'),
        ),
        migrations.AddIndex(
            model_name='alertattempt',
            index=models.Index(fields=['status', 'not_before'], name='attempt_status_due'),
        ),
        migrations.AddConstraint(
            model_name='mute',
            constraint=models.CheckConstraint(condition=models.Q(('group', ''), ('queue', ''), _negated=True), name='mute_queue_or_group'),
        ),
        migrations.RunPython(create_defaults, migrations.RunPython.noop),
    ]
