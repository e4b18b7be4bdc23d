from django.contrib import admin
from django.urls import include, path

from dlq.api.root import api
from dlq.health import metrics, probes
from dlq.web import signin, sso

# No login form but the console's own (throttled, audited): the admin site's sends everyone
# there, and back once they are signed in.
admin.site.login = signin.admin_login

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    path("login/", signin.SignIn.as_view(), name="login"),
    path("login/sso/", sso.start, name="sso-start"),
    path("login/sso/callback/", sso.callback, name="sso-callback"),
    path("logout/", sso.sign_out, name="logout"),
    path("healthz", probes.healthz, name="healthz"),
    path("readyz", probes.readyz, name="readyz"),
    path("metrics", metrics.metrics, name="metrics"),
    path("", include("dlq.web.urls")),
]
