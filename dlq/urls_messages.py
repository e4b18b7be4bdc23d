from django.urls import path

from dlq import views_messages as v

app_name = "messages"
urlpatterns = [
    path("", v.message_list, name="list"),
    path("<int:pk>/", v.message_detail, name="detail"),
]
