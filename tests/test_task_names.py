"""Celery task names are pinned (`name=`): a task queued before an upgrade names its function
by the name it had then, and a moved module must not orphan it."""

from django.conf import settings

from console.celery import app

# The names tasks had when they were queued by earlier versions: never change one.
PINNED = {
    "dlq.tasks.evaluate_alerts",
    "dlq.tasks.send_alert",
    "dlq.tasks.telegram_poll",
    "dlq.tasks.alert_lifecycle",
    "dlq.tasks.slack_respond",
    "dlq.tasks.index_search",
    "dlq.tasks.redrive_tick",
    "dlq.jobtasks.run_job",
    "dlq.jobtasks.resume_jobs",
    "dlq.health_tasks.check_drainers",
    "dlq.health_tasks.purge_retention",
    "dlq.health_tasks.fold_tallies",
}


def test_every_task_keeps_its_name():
    app.loader.import_default_modules()
    ours = {name for name in app.tasks if name.startswith("dlq.")}
    assert ours == PINNED


def test_beat_schedules_only_registered_tasks():
    app.loader.import_default_modules()
    scheduled = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert scheduled <= PINNED
    assert scheduled <= set(app.tasks)
