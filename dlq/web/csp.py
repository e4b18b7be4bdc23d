"""Content-Security-Policy on every response: scripts and styles only from our own static
files, so markup that slipped through escaping still cannot run or restyle the page.

htmx runs under it because base.html's <meta name="htmx-config"> turns off its inline
indicator <style> and its eval-based features (none of which the pages use)."""

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


def csp_middleware(get_response):
    def middleware(request):
        response = get_response(request)
        response.headers.setdefault("Content-Security-Policy", POLICY)
        return response

    return middleware
