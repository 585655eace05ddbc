"""The unsafe developer fallback: refused unless DEBUG and named; same protocol, tagged unsafe."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from evaluation.sandbox import RunStatus, call_spec, get_sandbox, parse_reply
from evaluation.sandbox.unsafe import UnsafeRlimitBackend
from tests.evaluation.test_sandbox_bwrap import run_parent, watch_for_strays


@pytest.fixture(autouse=True)
def no_stray_processes() -> Iterator[None]:
    yield from watch_for_strays()


def test_refused_without_debug(settings: Any) -> None:
    settings.DEBUG = False
    with pytest.raises(ImproperlyConfigured, match="only allowed with DEBUG = True"):
        get_sandbox("unsafe")


def test_refused_unless_named(settings: Any) -> None:
    settings.DEBUG = True
    with pytest.raises(ImproperlyConfigured, match="never chosen implicitly"):
        UnsafeRlimitBackend()


def test_runs_the_same_harness_and_warns(settings: Any, caplog: pytest.LogCaptureFixture) -> None:
    settings.DEBUG = True
    settings.EVALUATION_SANDBOX_BACKEND = "unsafe"
    assert isinstance(get_sandbox(), UnsafeRlimitBackend)
    backend = UnsafeRlimitBackend(explicitly_named=True, tmp_parent=run_parent())
    assert backend.safe is False
    specs = [
        call_spec("def f(a):\n    return a * 2\n", "f", [21]),
        call_spec("def f():\n    while True:\n        pass\n", "f", [], cpu_s=0.5, wall_s=10),
        call_spec(
            "def f():\n    x = []\n    while True:\n        x.append(b'x' * 2**23)\n",
            "f",
            [],
            mem_mib=96,
        ),
    ]
    with caplog.at_level(logging.WARNING, logger="evaluation.sandbox.unsafe"):
        ok, tle, mle = backend.run_batch(specs)
    assert "UNSAFE" in caplog.text
    assert ok.status == RunStatus.OK
    assert parse_reply(ok)["result"] == 42
    assert tle.status == RunStatus.TLE_CPU
    assert mle.status == RunStatus.MLE
    assert {r.backend for r in (ok, tle, mle)} == {"unsafe"}
    works, detail = backend.self_test()
    assert works
    assert "WITHOUT isolation" in detail
