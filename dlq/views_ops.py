"""Groups, bulk review, jobs and the audit log (skeleton, being built)."""

from django.http import HttpResponse

from dlq.roles import OPERATOR, VIEWER
from dlq.views import role_view


def _later(request, *args, **kwargs):
    return HttpResponse("Not built yet", status=501)


group_list = role_view(VIEWER)(_later)
bulk_review = role_view(OPERATOR)(_later)
job_list = role_view(VIEWER)(_later)
job_detail = role_view(VIEWER)(_later)
audit_list = role_view(VIEWER)(_later)
