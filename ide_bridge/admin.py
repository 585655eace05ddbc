"""The IDE bridge's admin pages live in their capability packages; Django's admin
autodiscovery imports this module, which imports them so they register their models."""

from __future__ import annotations

from ide_bridge.telemetry import admin as telemetry_admin

__all__ = ["telemetry_admin"]
