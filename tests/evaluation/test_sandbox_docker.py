"""Docker backend: a clear SandboxUnavailable without SDK or engine; a real run when one exists.

No Docker engine exists on the CI machines, so the real-run test skips there with its reason.
"""

from __future__ import annotations

import pytest

from evaluation.sandbox import RunStatus, SandboxUnavailable, call_spec, get_sandbox, parse_reply
from evaluation.sandbox.base import Sandbox


def _docker_or_reason() -> tuple[Sandbox | None, str]:
    try:
        return get_sandbox("docker"), ""
    except SandboxUnavailable as exc:
        return None, str(exc)


def test_unavailable_docker_is_reported_in_one_sentence() -> None:
    backend, reason = _docker_or_reason()
    if backend is not None:
        pytest.skip("a Docker engine is reachable here; nothing to report")
    assert reason.endswith(".")
    assert "\n" not in reason
    assert "pip install" in reason or "No Docker engine" in reason


def test_runs_a_solution_in_a_container() -> None:
    backend, reason = _docker_or_reason()
    if backend is None:
        pytest.skip(f"no Docker backend here: {reason}")
    works, detail = backend.self_test()
    assert works, detail
    ok, tle = backend.run_batch(
        [
            call_spec("def f(a):\n    return a + 1\n", "f", [1]),
            call_spec("def f():\n    while True:\n        pass\n", "f", [], cpu_s=0.5, wall_s=10),
        ]
    )
    assert ok.status == RunStatus.OK
    assert parse_reply(ok)["result"] == 2
    assert tle.status == RunStatus.TLE_CPU
    assert ok.backend == "docker"
