"""Developer settings: DEBUG on, a fixed local secret, console e-mail. Never deploy these."""

from __future__ import annotations

from config.settings.base import *  # noqa: F403
from config.settings.base import env

DEBUG = env.bool("DJANGO_DEBUG", default=True)
SECRET_KEY = env.str(
    "DJANGO_SECRET_KEY", default="dev-only-insecure-key-never-use-in-production-0123456789"
)
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])
EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
# Contact vault (study/vault/crypto.py): comma-separated Fernet keys, the first encrypts.
VAULT_KEYS: list[str] = env.list(
    "VAULT_KEYS",
    default=["hOZuYCg0PAJw1KwhJHZz4dKE9c2Un2KtSyAANuz2ip4="],  # dev-only key
)
# Export pseudonyms: empty means a development key derived from SECRET_KEY (the manifest says so).
EXPORT_HMAC_KEY = env.str("EXPORT_HMAC_KEY", default="")
