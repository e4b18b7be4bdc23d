"""Settings of the test IdP; serve.py sets IDP_DIR and IDP_SITE_URL before Django starts."""

import os
from pathlib import Path

DIR = Path(os.environ["IDP_DIR"])
SITE_URL = os.environ["IDP_SITE_URL"]  # a fixed issuer, whatever Host header a client sends

SECRET_KEY = "test-idp-not-secret"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "tests.idp.urls"
USE_TZ = True

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oidc_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "tests.idp.directory.DirectoryMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [Path(__file__).parent / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": DIR / "idp.sqlite3",
        # Requests run on threads of their own: take the write lock up front and wait for it.
        "OPTIONS": {"transaction_mode": "IMMEDIATE", "timeout": 20},
    }
}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast; test users only

LOGIN_URL = "/accounts/login/"
# The console runs on localhost, the IdP on 127.0.0.1 (cookies ignore ports): distinct names
# all the same.
SESSION_COOKIE_NAME = "idp_sessionid"
CSRF_COOKIE_NAME = "idp_csrftoken"

OIDC_IDTOKEN_EXPIRE = 600
OIDC_USERINFO = "tests.idp.claims.userinfo"
OIDC_EXTRA_SCOPE_CLAIMS = "tests.idp.claims.GroupsScopeClaims"
OIDC_IDTOKEN_PROCESSING_HOOK = "tests.idp.claims.add_groups"
# The profile and email claims go into the ID token too (as most IdPs do), per scope asked.
OIDC_IDTOKEN_INCLUDE_CLAIMS = True

LOGGING = {  # tracebacks of server errors to stderr, nothing else
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler"}},
    "loggers": {"django.request": {"handlers": ["stderr"], "level": "ERROR"}},
}
