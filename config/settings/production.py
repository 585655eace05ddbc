"""Production settings: no secret defaults, HTTPS-only cookies, HSTS, hashed static files.

Start-up fails with one clear sentence when required configuration is missing or wrong.
"""

from __future__ import annotations

from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from config.settings.base import *  # noqa: F403
from config.settings.base import REDIS_URL, env

DEBUG = False

SECRET_KEY = env.str("DJANGO_SECRET_KEY", default="")
if not SECRET_KEY:
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY is not set; production needs a long random secret "
        '(generate one with: python -c "import secrets; print(secrets.token_urlsafe(50))").'
    )
# Old keys still accepted for signatures during a rotation (comma-separated), see docs/deploy.md.
SECRET_KEY_FALLBACKS: list[str] = env.list("DJANGO_SECRET_KEY_FALLBACKS", default=[])
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=[])
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured(
        "DJANGO_ALLOWED_HOSTS is not set; give the comma-separated host names this site serves."
    )

# Contact vault: comma-separated Fernet keys, the first encrypts, all decrypt (rotation).
VAULT_KEYS: list[str] = env.list("VAULT_KEYS", default=[])
if not VAULT_KEYS:
    raise ImproperlyConfigured(
        "VAULT_KEYS is not set; production needs at least one Fernet key for the contact vault "
        '(generate one with: python -c "from cryptography.fernet import Fernet; '
        'print(Fernet.generate_key().decode())").'
    )
for _position, _vault_key in enumerate(VAULT_KEYS, start=1):
    try:
        Fernet(_vault_key)
    except ValueError:
        raise ImproperlyConfigured(
            f"VAULT_KEYS entry {_position} is not a Fernet key (32 url-safe base64-encoded bytes)."
        ) from None

if REDIS_URL and env.bool("HAIEVAL_CHECK_REDIS_AT_STARTUP", default=True):
    import redis

    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3, socket_timeout=3).ping()
    except (redis.RedisError, OSError) as exc:
        raise ImproperlyConfigured(
            f"Redis at REDIS_URL cannot be reached ({exc.__class__.__name__}: {exc})."
        ) from exc

# Export pseudonyms (study/exports/pseudonyms.py): a long random secret outside the database.
EXPORT_HMAC_KEY = env.str("EXPORT_HMAC_KEY", default="")
if len(EXPORT_HMAC_KEY) < 32:
    raise ImproperlyConfigured(
        "EXPORT_HMAC_KEY is not set (or shorter than 32 characters); production needs a long "
        'random secret for export pseudonyms (generate one with: python -c "import secrets; '
        'print(secrets.token_urlsafe(48))").'
    )

# Every researcher (staff account) signs in with a second factor; see study/researchers/mfa.py.
HAIEVAL_REQUIRE_MFA = env.bool("HAIEVAL_REQUIRE_MFA", default=True)

STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
# Load balancers and the compose health check call /healthz/ over plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^healthz/$"]
SECURE_HSTS_SECONDS = env.int("DJANGO_SECURE_HSTS_SECONDS", default=60 * 60 * 24 * 365)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("DJANGO_SECURE_HSTS_PRELOAD", default=True)
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_HTTPONLY = True
