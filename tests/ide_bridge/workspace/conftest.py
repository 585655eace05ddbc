"""The real bubblewrap sandbox for the workspace's visible-test runs."""

from __future__ import annotations

import os
from functools import cache
from typing import Any

import pytest

from evaluation.sandbox import SandboxUnavailable, get_sandbox


@cache
def _bwrap_problem() -> str:
    try:
        works, detail = get_sandbox("bwrap").self_test()
    except SandboxUnavailable as exc:
        return str(exc)
    return "" if works else detail


@pytest.fixture
def bwrap(settings: Any) -> None:
    """The real bubblewrap sandbox, or a skip (a failure under REQUIRE_SERVICES=1)."""
    problem = _bwrap_problem()
    if problem:
        if os.environ.get("REQUIRE_SERVICES", "") in {"1", "true", "yes"}:
            pytest.fail(f"the bwrap sandbox is required (REQUIRE_SERVICES=1): {problem}")
        pytest.skip(f"the bwrap sandbox cannot run here: {problem}")
    settings.EVALUATION_SANDBOX_BACKEND = "bwrap"
