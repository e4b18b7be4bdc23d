from django.urls import path

from dlq import views_alerts as v

app_name = "alerts"
urlpatterns = [
    path("", v.channel_list, name="channels"),
    path("channels/add/<str:kind>/", v.channel_add, name="add"),
    path("channels/<int:pk>/edit/", v.channel_edit, name="edit"),
    path("channels/<int:pk>/enable/", v.channel_enable, name="enable"),
    path("channels/<int:pk>/disable/", v.channel_disable, name="disable"),
    path("channels/<int:pk>/delete/", v.channel_delete, name="delete"),
    path("channels/<int:pk>/test/", v.channel_test, name="test"),
    path("attempts/", v.attempt_list, name="attempts"),
    path("rules/", v.rule_list, name="rules"),
    path("rules/add/", v.rule_edit, name="rule_add"),
    path("rules/<int:pk>/edit/", v.rule_edit, name="rule_edit"),
    path("mutes/add/", v.mute_add, name="mute_add"),
    path("mutes/<int:pk>/delete/", v.mute_delete, name="mute_delete"),
]
