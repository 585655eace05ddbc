"""Settings for the test suite.

SQLite in memory by default; PostgreSQL and Redis when ``DATABASE_URL``/``REDIS_URL`` are set
(CI sets both). Celery runs tasks eagerly here; tests that need a real worker start one.
"""

from __future__ import annotations

from config.settings.base import *  # noqa: F403
from config.settings.base import CHANNEL_LAYERS, DATABASES, env

DEBUG = False
SECRET_KEY = "test-only-key-not-secret-0123456789-abcdefghijklmnopqrstuvwxyz"  # noqa: S105
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "testserver"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
VAULT_KEYS = ["wb3J8NiPFLM7kBD0lx1cIf6RCtVaGuEyotVV8vPZg3s="]  # test-only Fernet key
EXPORT_HMAC_KEY = "test-only-export-hmac-key-not-secret-0123456789"
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=True)
CELERY_TASK_EAGER_PROPAGATES = True
# Tests that start a real worker point both processes at one file cache through this variable.
_shared_cache_dir = env.str("HAIEVAL_TEST_CACHE_DIR", default="")
CACHES = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": _shared_cache_dir,
        }
        if _shared_cache_dir
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["TEST"] = {"NAME": ""}  # in memory
    DATABASES["default"].pop("OPTIONS", None)
# Keep the channel layer chosen by base (Redis in CI, in-memory otherwise).
CHANNEL_LAYERS = CHANNEL_LAYERS
