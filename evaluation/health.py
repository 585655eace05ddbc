"""Sandbox, task-runtime and diagram-renderer availability for ``/healthz/``."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from evaluation.bank import BankError, list_templates
from evaluation.runtimes import DEFAULT_RUNTIME, statuses
from evaluation.sandbox import get_sandbox


def runtimes_status() -> dict[str, Any]:
    """Each task runtime's state. A runtime a shipped template names is ``error`` when missing
    or stale; one no template names only ``warning``."""
    try:
        used = {spec.runtime for spec in list_templates(retired=True)}
    except BankError:  # a broken bank is validate_bank's to report: count every runtime used
        used = None
    report = statuses(used)
    worst = {entry["status"] for entry in report.values()}
    status = "error" if "error" in worst else ("warning" if "warning" in worst else "ok")
    return {"status": status, "default": DEFAULT_RUNTIME, "runtimes": report}


def diagrams_status() -> dict[str, Any]:
    """Whether Graphviz can draw the diagrams: an error when a shipped template has diagrams
    (its instances cannot be built without it), else a warning."""
    from evaluation.diagrams import renderer_status

    state = renderer_status()
    if state["state"] == "ok":
        return {"status": "ok", "detail": state["detail"]}
    try:
        needed = any((spec.path / "diagrams").is_dir() for spec in list_templates(retired=True))
    except BankError:
        needed = True
    return {"status": "error" if needed else "warning", "detail": state["detail"]}


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
