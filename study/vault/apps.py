from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.core import checks

from study.vault.crypto import VaultKeyError, multi_fernet


class VaultConfig(AppConfig):
    name = "study.vault"
    label = "vault"
    verbose_name = "Contact and compensation vault"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        checks.register(_check_vault_keys, checks.Tags.security)


def _check_vault_keys(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    try:
        multi_fernet()
    except VaultKeyError as exc:
        return [checks.Error(str(exc), id="vault.E001")]
    return []
