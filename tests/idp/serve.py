"""The test IdP: `python -m tests.idp.serve DIR PORT` (from the checkout's root).

Keeps its SQLite database in DIR, reads DIR/directory.json (see directory.py), serves
http://127.0.0.1:PORT (django-oidc-provider under /openid/, a login page at
/accounts/login/) and prints READY once it accepts connections.
"""

import io
import os
import socketserver
import sys
from pathlib import Path
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server


class ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):
        pass


def main(directory: str, port: int) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.idp.settings"
    os.environ["IDP_DIR"] = str(Path(directory).resolve())
    os.environ["IDP_SITE_URL"] = f"http://127.0.0.1:{port}"

    import django
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application

    django.setup()
    from oidc_provider.models import RSAKey

    call_command("migrate", verbosity=0)
    if not RSAKey.objects.exists():
        # creatersakey reports a failure on stdout, and exits 0: check it did its job.
        call_command("creatersakey", stdout=io.StringIO())
        assert RSAKey.objects.exists(), "creatersakey made no key"

    server = make_server(
        "127.0.0.1", port, get_wsgi_application(), ThreadingWSGIServer, QuietHandler
    )
    print("READY", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
