from django.urls import path

from dlq import views_message_actions as act
from dlq import views_messages as v

app_name = "messages"
urlpatterns = [
    path("", v.message_list, name="list"),
    path("count/", v.message_count, name="count"),
    path("<int:pk>/", v.message_detail, name="detail"),
    path("<int:pk>/raw/", v.message_raw, name="raw"),
    path("<int:pk>/route/", v.route_preview, name="route"),
    path("<int:pk>/edit/", act.message_edit, name="edit"),
    path("<int:pk>/replay/", act.message_replay, name="replay"),
    path("<int:pk>/discard/", act.message_discard, name="discard"),
    path("<int:pk>/restore/", act.message_restore, name="restore"),
]
