"""Sandbox availability for ``/healthz/``."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from evaluation.sandbox import get_sandbox


def sandbox_status() -> dict[str, Any]:
    backend = getattr(settings, "EVALUATION_SANDBOX_BACKEND", "bwrap")
    try:
        sandbox = get_sandbox()
    except Exception as exc:  # reported in the health JSON, never raised
        return {"status": "error", "backend": backend, "detail": str(exc)}
    works, detail = sandbox.self_test()
    return {
        "status": "ok" if works else "error",
        "backend": sandbox.name,
        "isolated": sandbox.safe,
        "detail": detail,
        # cgroup-v1/-v2: CPU and memory are the whole process tree's; "none: ..." means no
        # cgroup could be had, so solutions may start no child process or thread at all.
        "accounting": sandbox.accounting,
    }
