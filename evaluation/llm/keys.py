"""Which environment variables may hold a model endpoint's API key.

An endpoint names the variable, never the key; the client sends that variable's value to the
endpoint's URL. So the name must look like an API key's (``..._API_KEY``, ``..._KEY``,
``..._TOKEN``) and may not be one of the platform's own settings (its secret key, database,
vault, export keys): otherwise anyone who may edit an endpoint could have the server send a
platform secret to a host of their choice.
"""

from __future__ import annotations

import re

from django.core.exceptions import ValidationError

KEY_ENV_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,58}(?:_KEY|_TOKEN)")
PLATFORM_PREFIXES = (
    "DJANGO_",
    "HAIEVAL_",
    "EVALUATION_",
    "VAULT_",
    "EXPORT_",
    "DATABASE_",
    "REDIS_",
    "CELERY_",
    "POSTGRES_",
    "PG",
    "SECRET_",
    "AWS_SECRET",
)


def key_env_problem(name: str) -> str | None:
    """Why ``name`` may not hold an API key, or None."""
    if not name:
        return None  # no key: local servers often need none
    if not KEY_ENV_NAME.fullmatch(name):
        return (
            f"{name!s:.80} does not look like an API key's variable: use capitals, digits and "
            "underscores, ending in _KEY or _TOKEN (e.g. OPENAI_API_KEY)."
        )
    if name.startswith(PLATFORM_PREFIXES):
        return f"{name} is one of the platform's own settings, not a model provider's key."
    return None


def validate_key_env(value: str) -> None:
    """Model-field validator of ``ModelEndpoint.api_key_env``."""
    problem = key_env_problem(value)
    if problem:
        raise ValidationError(problem)
