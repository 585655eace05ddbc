"""Unsafe developer fallback: the same runner and harness with rlimits only (notes §6).

This is NOT a sandbox: no filesystem, syscall, network or process isolation. The solution only
gets rlimits, a cleared environment, its own process group and (when the worker is root) uid
65534. It exists so that a developer without user namespaces can click through the platform.
It refuses to exist unless Django's ``DEBUG`` is true and it was named explicitly, logs a warning
on every batch, and tags results ``backend="unsafe"`` so they never feed calibration.
"""

from __future__ import annotations

import logging

from django.core.exceptions import ImproperlyConfigured

from evaluation.sandbox.base import RunResult, RunSpec
from evaluation.sandbox.bwrap import RunnerBackend

logger = logging.getLogger(__name__)


def _debug_enabled() -> bool:
    from django.conf import settings

    try:
        return bool(settings.DEBUG)
    except ImproperlyConfigured:
        return False


class UnsafeRlimitBackend(RunnerBackend):
    name = "unsafe"
    mode = "unsafe"

    def __init__(self, *, explicitly_named: bool = False, tmp_parent: str | None = None) -> None:
        super().__init__(tmp_parent=tmp_parent)
        if not explicitly_named:
            raise ImproperlyConfigured(
                "The unsafe sandbox backend is never chosen implicitly; "
                "set EVALUATION_SANDBOX_BACKEND = 'unsafe' (development only)."
            )
        if not _debug_enabled():
            raise ImproperlyConfigured(
                "The unsafe sandbox backend runs untrusted code without isolation "
                "and is only allowed with DEBUG = True."
            )

    @property
    def safe(self) -> bool:
        return False

    def run_batch(self, specs: list[RunSpec]) -> list[RunResult]:
        logger.warning(
            "Running %d program(s) with the UNSAFE backend: no isolation, developer use only.",
            len(specs),
        )
        return super().run_batch(specs)

    def self_test(self) -> tuple[bool, str]:
        seen, detail = self.probe()
        if seen is None:
            return False, detail
        return True, f"unsafe backend runs programs WITHOUT isolation; {detail}."
