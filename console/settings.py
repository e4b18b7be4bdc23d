"""DLQ Console settings: everything comes from the environment (see README, Configuration)."""

from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from console.env import (
    env_bool,
    env_choice,
    env_header,
    env_int,
    env_link_template,
    env_list,
    env_networks,
    env_patterns,
    env_role_map,
    env_str,
    env_url,
    env_urls,
)

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str(
    "SECRET_KEY", "dev-only-insecure-secret-key-change-me-in-production-0123456789"
)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "ninja",  # serves the API docs page's scripts from static files, not a CDN
    "axes",  # sign-in throttling (dlq/web/signin.py)
    "dlq",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files from any process (gunicorn in the image, `make run`), DEBUG or not.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "dlq.web.csp.csp_middleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "dlq.web.proxy.proxy_sign_in_middleware",  # DLQ_AUTH_PROXY_*; inert when unset
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes needs
]

ROOT_URLCONF = "console.urls"
WSGI_APPLICATION = "console.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dlq.web.access.console_context",
            ],
            # `visible`, the filter for untrusted text, in every template without a load.
            "builtins": ["dlq.templatetags.dlq_text"],
        },
    },
]


def _database(url: str) -> dict:
    try:
        config = dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
    except Exception as e:
        raise ImproperlyConfigured(f"DATABASE_URL is not a database URL: {e}") from None
    if config["ENGINE"] == "django.db.backends.sqlite3":
        name = Path(config["NAME"] or "var/dlq.sqlite3")
        name = name if name.is_absolute() else BASE_DIR / name
        name.parent.mkdir(parents=True, exist_ok=True)
        config["NAME"] = str(name)
        config["CONN_MAX_AGE"] = 0
        # WAL + a busy timeout let the drainer, the worker and the web share one file.
        config["OPTIONS"] = {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
        }
    elif config["ENGINE"] == "django.db.backends.postgresql":
        config.setdefault("OPTIONS", {})["connect_timeout"] = 5
    return config


DATABASE_URL = env_url(
    "DATABASE_URL", "sqlite:///var/dlq.sqlite3", ("sqlite", "postgres", "postgresql", "pgsql")
)
DATABASES = {"default": _database(DATABASE_URL)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
# Sign-in throttling (django-axes): per user name or per client address, whichever trips first.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "dlq.accounts.backends.LocalPasswordBackend",
    "dlq.accounts.backends.OidcBackend",
    "dlq.accounts.backends.ProxyBackend",
]
AXES_FAILURE_LIMIT = env_int("DLQ_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("DLQ_LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
# A success clears nothing: a signed-in user must not wipe the failures others caused from
# the same address. Failures expire with the lockout time.
AXES_RESET_ON_SUCCESS = False
AXES_LOCKOUT_CALLABLE = "dlq.web.signin.locked_out"
AXES_USERNAME_CALLABLE = "dlq.web.signin.axes_username"
LOGIN_REDIRECT_URL = "/"
# A shift, not Django's two weeks: a provider's user comes back through the provider, and
# their role is read again (dlq/accounts/external.py).
SESSION_COOKIE_AGE = 12 * 3600
LOGOUT_REDIRECT_URL = "login"  # not the admin's "logged out" page

# --- Sign-in through an identity provider or a trusted proxy (dlq/accounts/) ------------
# Local passwords: the form on /login/ and the admin site; off leaves only OIDC and the proxy.
DLQ_LOCAL_LOGIN = env_bool("DLQ_LOCAL_LOGIN", True)
DLQ_OIDC_DISCOVERY_URL = env_str("DLQ_OIDC_DISCOVERY_URL", "")
if DLQ_OIDC_DISCOVERY_URL:
    env_url("DLQ_OIDC_DISCOVERY_URL", "", ("https", "http"))
DLQ_OIDC_CLIENT_ID = env_str("DLQ_OIDC_CLIENT_ID", "")
DLQ_OIDC_CLIENT_SECRET = env_str("DLQ_OIDC_CLIENT_SECRET", "")
DLQ_OIDC_SCOPES = env_str("DLQ_OIDC_SCOPES", "openid email profile")
DLQ_OIDC_GROUPS_CLAIM = env_str("DLQ_OIDC_GROUPS_CLAIM", "groups")
DLQ_OIDC_ROLE_MAP = env_role_map("DLQ_OIDC_ROLE_MAP")
DLQ_AUTH_PROXY_USER_HEADER = env_header("DLQ_AUTH_PROXY_USER_HEADER")
DLQ_AUTH_PROXY_GROUPS_HEADER = env_header("DLQ_AUTH_PROXY_GROUPS_HEADER")
DLQ_AUTH_PROXY_ROLE_MAP = env_role_map("DLQ_AUTH_PROXY_ROLE_MAP")
DLQ_AUTH_PROXY_NETS = env_networks("DLQ_AUTH_PROXY_NETS", "none")


def _check_sign_in() -> None:
    """Half a configuration is a start-up error, not a sign-in that fails at 3 a.m."""
    if DLQ_OIDC_DISCOVERY_URL:
        for name in ("DLQ_OIDC_CLIENT_ID", "DLQ_OIDC_CLIENT_SECRET", "DLQ_OIDC_ROLE_MAP"):
            if not globals()[name]:
                raise ImproperlyConfigured(f"DLQ_OIDC_DISCOVERY_URL is set, {name} is not")
        if "openid" not in DLQ_OIDC_SCOPES.split():
            raise ImproperlyConfigured("DLQ_OIDC_SCOPES must include openid")
    if DLQ_AUTH_PROXY_USER_HEADER:
        for name in ("DLQ_AUTH_PROXY_NETS", "DLQ_AUTH_PROXY_ROLE_MAP",
                     "DLQ_AUTH_PROXY_GROUPS_HEADER"):  # fmt: skip
            if not globals()[name]:
                raise ImproperlyConfigured(f"DLQ_AUTH_PROXY_USER_HEADER is set, {name} is not")
    if not (DLQ_LOCAL_LOGIN or DLQ_OIDC_DISCOVERY_URL or DLQ_AUTH_PROXY_USER_HEADER):
        raise ImproperlyConfigured(
            "DLQ_LOCAL_LOGIN=false needs another way to sign in: "
            "DLQ_OIDC_DISCOVERY_URL or DLQ_AUTH_PROXY_USER_HEADER"
        )


_check_sign_in()

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

# Edits carry whole bodies (base64 in JSON): allow large ones, still bounded.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DLQ_MAX_REQUEST_BYTES", 32 * 1024 * 1024, minimum=1024)

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "var" / "static"
# Without collectstatic (`make run`, tests) WhiteNoise serves straight from the sources.
WHITENOISE_USE_FINDERS = True
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns about a missing one

# --- RabbitMQ -------------------------------------------------------------------------
# Several comma-separated URLs are the nodes of one cluster, tried in turn (dlq/broker/amqp.py).
DLQ_BROKER_URL = env_urls(
    "DLQ_BROKER_URL", "amqp://guest:guest@localhost:5672/%2F", ("amqp", "amqps")
)
DLQ_MANAGEMENT_URL = env_urls(
    "DLQ_MANAGEMENT_URL", "http://guest:guest@localhost:15672", ("http", "https")
)
# QUEUE or VHOST/QUEUE, names or globs (dlq/broker/names.py).
DLQ_QUEUES = env_patterns("DLQ_QUEUES", "*.dlq,*.dead,*.parking,*_error")
DLQ_CONSOLE_URL = env_url("DLQ_CONSOLE_URL", "http://localhost:8000", ("http", "https"))
DLQ_TELEGRAM_API_URL = env_url(
    "DLQ_TELEGRAM_API_URL", "https://api.telegram.org", ("http", "https")
)
# Alerts you can act on (dlq/alerts/slack/, dlq/alerts/telegram/): Slack's buttons are off
# without a signing secret; Telegram's presses are polled, posted to a webhook, or off.
DLQ_SLACK_SIGNING_SECRET = env_str("DLQ_SLACK_SIGNING_SECRET", "")
DLQ_TELEGRAM_UPDATES = env_choice("DLQ_TELEGRAM_UPDATES", "poll", ("poll", "webhook", "off"))
DLQ_TELEGRAM_WEBHOOK_SECRET = env_str("DLQ_TELEGRAM_WEBHOOK_SECRET", "")
if DLQ_TELEGRAM_UPDATES == "webhook" and not DLQ_TELEGRAM_WEBHOOK_SECRET:
    raise ImproperlyConfigured(
        "DLQ_TELEGRAM_UPDATES=webhook needs DLQ_TELEGRAM_WEBHOOK_SECRET (checked against "
        "Telegram's X-Telegram-Bot-Api-Secret-Token header)"
    )
# A link to a message's trace in the tracing UI: {trace_id} is replaced (dlq/messages/traces.py).
DLQ_TRACE_URL = env_link_template("DLQ_TRACE_URL", "", "{trace_id}")

# Drainer tuning (documented in the README; the defaults are the measured sweet spot).
DLQ_DRAIN_BATCH = env_int("DLQ_DRAIN_BATCH", 1000, minimum=1, maximum=10_000)
DLQ_DRAIN_PREFETCH = env_int("DLQ_DRAIN_PREFETCH", 2000, minimum=1, maximum=65_535)
DLQ_DRAIN_FLUSH_MS = env_int("DLQ_DRAIN_FLUSH_MS", 50, minimum=1, maximum=10_000)
DLQ_DRAIN_BATCH_BYTES = env_int("DLQ_DRAIN_BATCH_BYTES", 16 * 1024 * 1024, minimum=1024)
# Replays: 0 = the broker's default for its version (128 MiB on 3.x, 16 MiB on 4.x).
DLQ_MAX_MESSAGE_BYTES = env_int("DLQ_MAX_MESSAGE_BYTES", 0, minimum=0)
# Keep user_id on replay only if the console's broker user may impersonate (tag impersonator).
DLQ_REPLAY_KEEP_USER_ID = env_bool("DLQ_REPLAY_KEEP_USER_ID", False)
DLQ_REPLAY_WINDOW = env_int("DLQ_REPLAY_WINDOW", 1000, minimum=1, maximum=65_535)
# A bulk job publishes a message the broker nacked again after pauses of 0.5 s, doubling, this
# many times (7.5 s in all by default) before it records it `nacked` (dlq/jobs/running.py).
DLQ_REPLAY_NACK_RETRIES = env_int("DLQ_REPLAY_NACK_RETRIES", 4, minimum=0, maximum=8)
# A running job whose worker has not reported for this long is taken over by another.
DLQ_JOB_STALE_SECONDS = env_int("DLQ_JOB_STALE_SECONDS", 30, minimum=1)
# A replay job meeting this many identical broker errors in a row pauses (`waiting`) until an
# operator resumes or cancels it (dlq/jobs/running.py); 0 never pauses.
DLQ_JOB_PAUSE_AFTER_ERRORS = env_int("DLQ_JOB_PAUSE_AFTER_ERRORS", 5, minimum=0)
DLQ_RESOLVE_SECONDS = env_int("DLQ_RESOLVE_SECONDS", 15, minimum=1, maximum=30)
DLQ_DRAIN_HEARTBEAT = env_int("DLQ_DRAIN_HEARTBEAT", 30, minimum=1, maximum=600)

# --- Operations: drainer health, retention, metrics, topology checks (see dlq/drain/heartbeat.py)
# A drainer that has not reported for this long (and did not stop cleanly) alerts.
DLQ_DRAINER_STALE_SECONDS = env_int("DLQ_DRAINER_STALE_SECONDS", 60, minimum=10)
# Replayed and discarded messages are purged this many days after their last status
# change (0 = never); parked messages never are.
DLQ_RETENTION_DAYS = env_int("DLQ_RETENTION_DAYS", 30, minimum=0)
# How far ahead a mute may end: a forgotten mute must not silence alerts for ever.
DLQ_MUTE_MAX_DAYS = env_int("DLQ_MUTE_MAX_DAYS", 30, minimum=1, maximum=3650)
DLQ_AUDIT_RETENTION_DAYS = env_int("DLQ_AUDIT_RETENTION_DAYS", 0, minimum=0)  # 0 = forever
DLQ_RETENTION_BATCH = env_int("DLQ_RETENTION_BATCH", 1000, minimum=1, maximum=100_000)
# /metrics answers a Bearer token, a client address in these networks, or a viewer's session.
DLQ_METRICS_TOKEN = env_str("DLQ_METRICS_TOKEN", "")
DLQ_METRICS_ALLOWED_NETS = env_networks("DLQ_METRICS_ALLOWED_NETS", "127.0.0.0/8,::1/128")
# Internal networks alert webhooks entered in the console may reach (dlq/alerts/destinations.py).
DLQ_ALERT_ALLOWED_NETS = env_networks("DLQ_ALERT_ALLOWED_NETS", "none")
# Work queues the topology page checks for a missing dead-letter exchange: QUEUE globs (in
# every checked vhost) or VHOST/QUEUE (dlq/health/topology.py).
DLQ_WORK_QUEUES = env_patterns("DLQ_WORK_QUEUES", "*")

# --- Celery ---------------------------------------------------------------------------
# Kombu separates failover URLs with ";" (its documented form).
CELERY_BROKER_URL = env_urls(
    "CELERY_BROKER_URL", DLQ_BROKER_URL, ("amqp", "amqps", "redis", "rediss")
).replace(",", ";")
CELERY_TASK_ACKS_LATE = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = False
CELERY_IMPORTS = ("dlq.tasks",)
# Workers of one deployment (or one test run) share a queue name; the default is Celery's.
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_TASK_DEFAULT_QUEUE", "celery")


def _every(task: str, seconds: float) -> dict:
    # "expires" drops ticks a busy or stopped worker did not take in time, so a backlog never
    # turns into a burst of passes.
    return {"task": task, "schedule": seconds, "options": {"expires": seconds - 1}}


CELERY_BEAT_SCHEDULE = {
    # Alerts: count new arrivals, send due digests.
    "evaluate-alerts": _every("dlq.tasks.evaluate_alerts", 15.0),
    # Telegram button presses and /start messages (DLQ_TELEGRAM_UPDATES=poll): a 4-s long
    # poll per bot; a tick with no Telegram channel reads one table and ends.
    "telegram-poll": _every("dlq.tasks.telegram_poll", 5.0),
    # Resolved groups forgotten (they alert again as new), Telegram alerts edited to show
    # their groups' states.
    "alert-lifecycle": _every("dlq.tasks.alert_lifecycle", 30.0),
    # The search index follows the drainer (dlq/messages/search.py); a search is exact
    # meanwhile, but the newer the messages it has not reached, the more a search reads.
    "index-search": _every("dlq.tasks.index_search", 5.0),
    # Redrive policies (dlq/redrive/scheduler.py): its interval is the scheduler's TICK_SECONDS.
    "redrive": _every("dlq.tasks.redrive_tick", 2.0),
    # Jobs whose worker died (or whose start message was lost) are resumed.
    "resume-jobs": _every("dlq.jobtasks.resume_jobs", 30.0),
    # A drainer that stopped reporting alerts once.
    "check-drainers": _every("dlq.health_tasks.check_drainers", 30.0),
    # The queues' counts (dlq/messages/tallies.py): one row per queue again.
    "fold-tallies": _every("dlq.health_tasks.fold_tallies", 30.0),
    # Retention: replayed and discarded messages (and audit rows, if configured) in batches.
    "purge-retention": _every("dlq.health_tasks.purge_retention", 3600.0),
}
# Keep the console's structured log format in workers.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# --- Logging --------------------------------------------------------------------------
LOG_LEVEL = env_str("DLQ_LOG_LEVEL", "INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "logfmt": {"()": "console.logfmt.LogfmtFormatter"},
        "json": {"()": "console.logfmt.JsonFormatter"},
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json" if env_bool("DLQ_LOG_JSON", False) else "logfmt",
        }
    },
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    # Libraries say routine things at INFO (axes: "BEGIN" at every start, each handler run;
    # Celery: every beat tick, every task received and succeeded, the worker's start-up; the
    # development server: every request): quiet unless DLQ_LOG_LEVEL=DEBUG. Their warnings
    # and errors (a failed sign-in, a lockout, a task that failed, a 500) still come through.
    "loggers": {
        name: {"level": LOG_LEVEL if LOG_LEVEL in ("DEBUG", "ERROR", "CRITICAL") else "WARNING"}
        for name in (
            "pika",
            "axes",
            "celery.beat",
            "celery.app.trace",
            "celery.worker",
            "django.server",
        )
    },  # fmt: skip
}
