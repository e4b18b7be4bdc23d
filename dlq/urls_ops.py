"""Pages over many messages: failure groups, bulk review, jobs, the audit log."""

from django.urls import path

from dlq import views_audit, views_jobs, views_ops

app_name = "ops"
urlpatterns = [
    path("groups/", views_ops.group_list, name="groups"),
    path("bulk/review/", views_ops.bulk_review, name="bulk_review"),
    path("jobs/", views_jobs.job_list, name="jobs"),
    path("jobs/<int:pk>/", views_jobs.job_detail, name="job"),
    path("jobs/<int:pk>/cancel/", views_jobs.job_cancel, name="job_cancel"),
    path("audit/", views_audit.audit_list, name="audit"),
]
