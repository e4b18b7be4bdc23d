"""Pages over many messages: failure groups, bulk review, jobs, the audit log."""

from django.urls import path

from dlq import views_ops as v

app_name = "ops"
urlpatterns = [
    path("groups/", v.group_list, name="groups"),
    path("bulk/review/", v.bulk_review, name="bulk_review"),
    path("jobs/", v.job_list, name="jobs"),
    path("jobs/<int:pk>/", v.job_detail, name="job"),
    path("audit/", v.audit_list, name="audit"),
]
