from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

from dlq.api.root import api
from dlq.health import metrics, probes
from dlq.web import signin, slack, sso

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
    # Browsers and tools that ask for /favicon.ico without reading the page's link.
    path("favicon.ico", RedirectView.as_view(url=static("dlq/favicon.svg"), permanent=True)),
    path("healthz", probes.healthz, name="healthz"),
    path("readyz", probes.readyz, name="readyz"),
    path("metrics", metrics.metrics, name="metrics"),
    # Slack's interactivity Request URL: signed by Slack, no session.
    path("integrations/slack/interactions", slack.interactions_view, name="slack-interactions"),
    path("", include("dlq.web.urls")),
]

# Styled like the console, with the request id (dlq/web/errors.py).
handler403 = "dlq.web.errors.permission_denied"
handler404 = "dlq.web.errors.not_found"
handler500 = "dlq.web.errors.server_error"
