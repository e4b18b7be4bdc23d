"""Content-Security-Policy on every response: scripts and styles only from our own static
files, so markup that slipped through escaping still cannot run or restyle the page.

htmx runs under it because base.html's <meta name="htmx-config"> turns off its inline
indicator <style> and its eval-based features (none of which the pages use).

With single sign-on, "Log out" (a form) ends at the provider's end-session endpoint, and
form-action governs a form's redirects too: the provider's origin is allowed there."""

from dlq.accounts import oidc

POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",  # the API docs page's icons
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


def _signed_in_through_provider(request) -> bool:
    from dlq.web.sso import ID_TOKEN_KEY  # the web layer's session key; imported late

    session = getattr(request, "session", None)
    return session is not None and ID_TOKEN_KEY in session


def csp_middleware(get_response):
    def middleware(request):
        response = get_response(request)
        extra = (
            oidc.logout_origins(load=_signed_in_through_provider(request))
            if (oidc.enabled())
            else ()
        )
        policy = POLICY.replace("form-action 'self'", " ".join(["form-action 'self'", *extra]))
        response.headers.setdefault("Content-Security-Policy", policy)
        return response

    return middleware
