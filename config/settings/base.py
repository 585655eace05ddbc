"""Settings shared by every environment, read from the process environment.

Every value a deployment may change comes from an environment variable (see the configuration
table in README.md). Defaults here are the embedded ones: a SQLite file database, no Redis, an
embedded Celery broker in ``var/`` and an in-memory channel layer.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(environ.Env().str("HAIEVAL_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

env = environ.Env()

APP_VERSION = (BASE_DIR / "VERSION").read_text(encoding="utf-8").strip()

# --- Core -----------------------------------------------------------------------------------
DEBUG = env.bool("DJANGO_DEBUG", default=False)
SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
ALLOWED_HOSTS: list[str] = env.list("DJANGO_ALLOWED_HOSTS", default=[])
CSRF_TRUSTED_ORIGINS: list[str] = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

TIME_ZONE = env.str("DJANGO_TIME_ZONE", default="UTC")
USE_TZ = True
LANGUAGE_CODE = "en-us"
USE_I18N = True

DJANGO_APPS = [
    "daphne",  # first, so ``runserver`` serves the ASGI application (HTTP + WebSockets)
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
]
THIRD_PARTY_APPS = [
    "channels",
    "allauth",
    "allauth.account",
    "allauth.mfa",
]
LOCAL_APPS = [
    "evaluation",
    "study",
    "ide_bridge",
    "study.vault",
]
INSTALLED_APPS = DJANGO_APPS + THIRD_PARTY_APPS + LOCAL_APPS

AUTH_USER_MODEL = "study.User"

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.csp.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "study.researchers.mfa.StaffMFAMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

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
                "config.context_processors.platform",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # environ warns before it fails; we say it once, below
        DATABASES = {
            "default": env.db_url("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}")
        }
except Exception as exc:  # environ raises several types for a malformed URL
    raise ImproperlyConfigured(
        f"DATABASE_URL is not a database URL this platform understands ({exc}); "
        "use e.g. postgres://user:password@host:5432/name or sqlite:////absolute/path.db"
    ) from exc
if DATABASES["default"].get("ENGINE") not in {
    "django.db.backends.postgresql",
    "django.db.backends.sqlite3",
}:
    raise ImproperlyConfigured(
        "DATABASE_URL must point at PostgreSQL (postgres://...) or SQLite (sqlite:///...)."
    )
DATABASES["default"]["ATOMIC_REQUESTS"] = False
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web process read while the worker writes; a busy timeout instead of
    # "database is locked" when both write at once.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
    }
else:
    # 0 under ASGI: Django closes connections per request; persistent ones leak across threads.
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("DJANGO_CONN_MAX_AGE", default=0)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis (optional) -----------------------------------------------------------------------
REDIS_URL: str = env.str("REDIS_URL", default="")
if REDIS_URL and not REDIS_URL.startswith(("redis://", "rediss://", "unix://")):
    raise ImproperlyConfigured(
        "REDIS_URL must start with redis://, rediss:// or unix:// (got something else)."
    )

CACHES: dict[str, dict[str, Any]]
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
        }
    }
else:
    # A file cache is shared by the web and worker processes (the worker heartbeat uses it).
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    }

# --- Channels -------------------------------------------------------------------------------
CHANNEL_LAYERS: dict[str, dict[str, Any]]
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [REDIS_URL]},
        }
    }
else:
    # In-memory: works only inside one process (the web process). See docs/architecture.md.
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# --- Celery ---------------------------------------------------------------------------------
# Without Redis the broker is an SQLite file that the web and worker processes share, so the
# default run still grades in a separate, real worker process.
CELERY_BROKER_URL: str = env.str(
    "CELERY_BROKER_URL",
    default=REDIS_URL or f"sqla+sqlite:///{VAR_DIR / 'celery-broker.sqlite3'}",
)
CELERY_RESULT_BACKEND: str = env.str(
    "CELERY_RESULT_BACKEND",
    default=REDIS_URL or f"db+sqlite:///{VAR_DIR / 'celery-results.sqlite3'}",
)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TRACK_STARTED = True
CELERY_RESULT_EXTENDED = True
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = TIME_ZONE
# Seconds after which /healthz/ calls a worker heartbeat stale.
WORKER_HEARTBEAT_INTERVAL = env.int("WORKER_HEARTBEAT_INTERVAL", default=10)

# --- Auth and accounts ----------------------------------------------------------------------
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "account_login"
LOGIN_REDIRECT_URL = "study:researcher_home"
ACCOUNT_ADAPTER = "study.researchers.adapters.ResearcherAccountAdapter"
ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_EMAIL_VERIFICATION = "none"
ACCOUNT_UNIQUE_EMAIL = True
ACCOUNT_LOGOUT_ON_PASSWORD_CHANGE = False
ACCOUNT_SESSION_REMEMBER = None
# allauth's rate limiter also guards the participants' personal and recruitment links (POSTs per
# client address) and the accounts a recruitment link creates (per study); see
# study/enrolment/views.py. The client address is the TRUSTED_PROXY_COUNT-th X-Forwarded-For
# hop from the right, or, with the default 0, REMOTE_ADDR (the TCP peer: daphne runs without
# --proxy-headers, so no header a client sends can change it).
ACCOUNT_RATE_LIMITS = {
    "study_link": f"{env.int('STUDY_LINK_POSTS_PER_MINUTE', default=20)}/m/ip",
    "study_join": f"{env.int('STUDY_JOINS_PER_HOUR', default=100)}/h/key",
}
ALLAUTH_TRUSTED_PROXY_COUNT = env.int("DJANGO_TRUSTED_PROXY_COUNT", default=0)
MFA_SUPPORTED_TYPES = ["totp", "recovery_codes"]
MFA_TOTP_ISSUER = env.str("MFA_TOTP_ISSUER", default="HAI-Eval")
# Staff accounts without TOTP are sent to set it up before any admin or researcher page
# (study/researchers/mfa.py). Production turns it on unless told otherwise.
HAIEVAL_REQUIRE_MFA = env.bool("HAIEVAL_REQUIRE_MFA", default=False)

# --- E-mail ---------------------------------------------------------------------------------
EMAIL_CONFIG = env.email_url("EMAIL_URL", default="consolemail://")
vars().update(EMAIL_CONFIG)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="HAI-Eval <noreply@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL

# --- Static files ---------------------------------------------------------------------------
STATIC_URL = "/static/"
STATIC_ROOT = Path(env.str("DJANGO_STATIC_ROOT", default=str(VAR_DIR / "staticfiles")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns when it is missing
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
MEDIA_ROOT = Path(env.str("DJANGO_MEDIA_ROOT", default=str(VAR_DIR / "media")))
MEDIA_URL = "/media/"

# --- Security headers that hold everywhere --------------------------------------------------
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
# Content-Security-Policy of every response (config/csp.py; the shape of Django 6's SECURE_CSP).
# Scripts only from our origin (no inline script, no eval); inline styles for Monaco and Plotly;
# Monaco's workers may start from blob: URLs; Bootstrap's CSS draws icons from data: images.
SECURE_CSP: dict[str, list[str]] = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "style-src": ["'self'", "'unsafe-inline'"],
    "img-src": ["'self'", "data:"],
    "font-src": ["'self'", "data:"],
    "connect-src": ["'self'"],
    "worker-src": ["'self'", "blob:"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "form-action": ["'self'"],
    "frame-ancestors": ["'none'"],
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("DJANGO_LOG_LEVEL", default="INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# --- Evaluation engine ----------------------------------------------------------------------
# "bwrap" (default, Linux), "docker" (needs an engine), "unsafe" (DEBUG only; no isolation).
EVALUATION_SANDBOX_BACKEND = env.str("EVALUATION_SANDBOX_BACKEND", default="bwrap")
# Measure each run with its own cgroup (the whole process tree); off: solutions may then start
# no child process or thread at all (/healthz/ and reports say which).
EVALUATION_CGROUPS = env.bool("EVALUATION_CGROUPS", default=True)
# At most this share of one CPU for each sandboxed run (a cgroup CPU quota), e.g. 0.5 on a
# shared host; unset: no quota. Grading judges CPU time, which a quota does not change.
EVALUATION_CPU_QUOTA = env.float("EVALUATION_CPU_QUOTA", default=None)
# Where task runtimes (evaluation/runtimes) are installed, one read-only directory each;
# `python -m evaluation.runtimes install --all` (run by ./dev) fills it. Unset: var/runtimes in
# the repository, or /var/lib/haieval/runtimes/<hash> when the sandbox's uid cannot reach that.
EVALUATION_RUNTIMES_DIR = env.str("EVALUATION_RUNTIMES_DIR", default=None)
CELERY_TASK_ROUTES = {"evaluation.grade_submission": {"queue": "judge"}}
# Grading a submission runs many sandboxed processes; a stuck task is killed after this.
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=1800)
CELERY_TASK_SOFT_TIME_LIMIT = CELERY_TASK_TIME_LIMIT - 60
CELERY_BEAT_SCHEDULE = {
    # Trials are closed on the server at their deadline even when nobody is looking.
    "close-overdue-trials": {"task": "study.close_overdue_trials", "schedule": 60.0},
}
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")

# --- IRB exports ----------------------------------------------------------------------------
# Key of the export pseudonyms (study/exports/pseudonyms.py); kept outside the database and every
# package. Empty outside production: a development key derived from SECRET_KEY, labelled as such.
EXPORT_HMAC_KEY: str = env.str("EXPORT_HMAC_KEY", default="")
