from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from dlq.api.root import api
from dlq.health import metrics, probes

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("healthz", probes.healthz, name="healthz"),
    path("readyz", probes.readyz, name="readyz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("", include("dlq.web.urls")),
]
