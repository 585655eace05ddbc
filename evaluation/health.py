"""Sandbox availability for ``/healthz/``."""

from __future__ import annotations

from typing import Any


def sandbox_status() -> dict[str, Any]:
    return {"status": "not_configured", "detail": "no sandbox backend is configured yet"}
