"""Shared, expensive fixtures for grading tests: a real bubblewrap sandbox and one calibration
per template, measured once per test session, and a way to store it for the services."""

from __future__ import annotations

import os
from functools import cache
from typing import Any

import pytest

from evaluation.bank import list_templates
from evaluation.calibration import CalibrationResult, calibrate, perf_fingerprint
from evaluation.grading import CanaryDrift, grade
from evaluation.instances import get_instance
from evaluation.models import Calibration
from evaluation.sandbox import get_sandbox
from evaluation.sandbox.base import Sandbox, SandboxUnavailable
from evaluation.services import record_template
from evaluation.spec import Instance

CHEAP_TEMPLATE = "sde-binary-palindromes"


def representative_slugs() -> list[str]:
    """One template per way a solution is run (runtime, entry-point kinds, one file or a
    project): the engine's sandbox and calibration properties depend on these, not on the task,
    so grading tests stay proportionate as the bank grows. Retired templates come first: they
    never change, which keeps these fixtures stable while the active bank is revised."""
    chosen: dict[tuple[Any, ...], str] = {}
    specs = list_templates(retired=True)
    for spec in sorted(specs, key=lambda t: (not t.retired, t.slug)):
        kinds = tuple(sorted({e.get("kind", "function") for e in spec.raw.get("entry_points", [])}))
        one_file = (spec.path / "starter" / "solution.py.tmpl").is_file()
        chosen.setdefault((spec.runtime, kinds, one_file), spec.slug)
    return sorted(chosen.values())


@cache
def real_sandbox() -> Sandbox:
    return get_sandbox("bwrap")


def sandbox_or_skip() -> Sandbox:
    try:
        sandbox = real_sandbox()
        works, detail = sandbox.self_test()
    except SandboxUnavailable as exc:
        works, detail = False, str(exc)
    if not works:
        if os.environ.get("REQUIRE_SERVICES") == "1":
            pytest.fail(f"bubblewrap sandbox required but unavailable: {detail}")
        pytest.skip(f"bubblewrap sandbox unavailable: {detail}")
    return real_sandbox()


_calibrations: dict[tuple[str, int], CalibrationResult] = {}


def calibration_for(slug: str, seed: int = 1, *, fresh: bool = False) -> CalibrationResult:
    key = (slug, seed)
    if fresh or key not in _calibrations:
        _calibrations[key] = calibrate(get_instance(slug, seed), real_sandbox(), rounds=3)
    return _calibrations[key]


def grade_like_the_service(instance: Instance, source: bytes, **kwargs: Any) -> dict[str, Any]:
    """grade() with the services' rule: when the canary drifted, recalibrate once and retry."""
    try:
        return grade(
            instance,
            source,
            sandbox=real_sandbox(),
            calibration=calibration_for(instance.template.slug),
            **kwargs,
        )
    except CanaryDrift:
        fresh = calibration_for(instance.template.slug, fresh=True)
        return grade(
            instance,
            source,
            sandbox=real_sandbox(),
            calibration=fresh,
            tolerate_drift=True,
            **kwargs,
        )


def instance(slug: str = CHEAP_TEMPLATE, seed: int = 1) -> Instance:
    return get_instance(slug, seed)


def store_calibration() -> Calibration:
    """Store the session's calibration of the cheap template (needs the database), so the
    services reuse it instead of measuring again."""
    sandbox = sandbox_or_skip()
    inst = instance()
    result = calibration_for(inst.template.slug)
    return Calibration.objects.create(
        template=record_template(inst.template),
        perf_fingerprint=perf_fingerprint(inst),
        host_fingerprint=sandbox.fingerprint(),
        backend=sandbox.name,
        status=Calibration.Status.VALID,
        message=result.message,
        data=result.to_json(),
    )
