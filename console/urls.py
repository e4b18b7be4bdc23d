from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from dlq import health, metrics, views, views_health
from dlq.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.overview, name="overview"),
    path("alerts/", include("dlq.urls_alerts")),
    path("messages/", include("dlq.urls_messages")),
    path("", include("dlq.urls_ops")),
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("topology/", views_health.topology_health, name="topology"),
    path("drainers/", views_health.drainers, name="drainers"),
]
