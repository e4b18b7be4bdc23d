from django.apps import AppConfig


class DlqConfig(AppConfig):
    name = "dlq"
    verbose_name = "DLQ Console"
    default_auto_field = "django.db.models.BigAutoField"
