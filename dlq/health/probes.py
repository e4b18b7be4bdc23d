"""Liveness and readiness probes, for load balancers and orchestrators.

/healthz answers 200 while the process serves requests (it touches nothing else, so a
database outage never gets a healthy web process restarted). /readyz checks what the
console needs to work, the database and the broker, and answers 503 naming the check that
failed. Both are public: they reveal no more than "up" or which part is unreachable. The
reason (hosts, ports, vhost, the driver's message) is for the operator: `dlq_health ready`
prints it.
"""

from django.conf import settings
from django.db import DatabaseError, connection
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from dlq.broker import amqp


@require_GET
@never_cache
def healthz(request):
    return JsonResponse({"status": "ok"})


@require_GET
@never_cache
def readyz(request):
    checks = {
        name: "ok" if result == "ok" else "unreachable"
        for name, result in (("database", check_database()), ("broker", check_broker()))
    }
    ready = all(result == "ok" for result in checks.values())
    return JsonResponse(
        {"status": "ok" if ready else "unavailable", "checks": checks},
        status=200 if ready else 503,
    )


def check_database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as e:
        connection.close()  # the next request starts from a fresh connection
        return f"unreachable: {_first_line(e)}"
    return "ok"


def check_broker() -> str:
    try:
        amqp.ping(settings.DLQ_BROKER_URL)
    except amqp.AllErrors as e:
        return f"unreachable ({amqp.describe(settings.DLQ_BROKER_URL)}): {_first_line(e)}"
    return "ok"


def _first_line(error: Exception) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:200]
