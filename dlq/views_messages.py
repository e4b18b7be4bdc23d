"""The messages pages: the filtered list and one message (skeleton, being built)."""

from django.http import HttpResponse

from dlq.roles import VIEWER
from dlq.views import role_view


@role_view(VIEWER)
def message_list(request):
    return HttpResponse("Messages: not built yet", status=501)


@role_view(VIEWER)
def message_detail(request, pk: int):
    return HttpResponse("Message: not built yet", status=501)
