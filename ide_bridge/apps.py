from __future__ import annotations

from django.apps import AppConfig


class IdeBridgeConfig(AppConfig):
    name = "ide_bridge"
    verbose_name = "IDE bridge"
    default_auto_field = "django.db.models.BigAutoField"
