"""Solutions that hide their work in child processes never pass (issue 10 §1), graded whole.

For every template in the bank: a *forked-child naive* solution (the naive reference runs in a
forked child, the answer comes back through a pipe) and a *forked memory hog* (children hold
memory while the parent answers with the efficient reference) are graded ``overall_pass: false``.
With the default of no child processes they cannot even start one; where a template allows
child processes, the whole tree's CPU time and memory are what is judged.
"""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any

import pytest

from evaluation.calibration import CalibrationResult, calibrate
from evaluation.grading import CanaryDrift, grade
from evaluation.instances import get_instance
from evaluation.sandbox.base import Sandbox
from evaluation.spec import Instance
from tests.evaluation.grading_fixtures import (
    CHEAP_TEMPLATE,
    calibration_for,
    real_sandbox,
    representative_slugs,
    sandbox_or_skip,
)

CHILD_WRAPPER = """
import json as _json
import os as _os
import time as _time

_REFERENCE = {reference!r}


def {entry}(*args, **kwargs):
    namespace = {{"__name__": "reference"}}
    exec(compile(_REFERENCE, "reference.py", "exec"), namespace)
    ready_r, ready_w = _os.pipe()
    for _ in range({hogs}):  # children that only hold memory
        if _os.fork() == 0:
            block = bytearray({hog_mib} << 20)
            for i in range(0, len(block), 4096):
                block[i] = 1
            _os.write(ready_w, b"!")
            while True:
                _time.sleep(3600)
    for _ in range({hogs}):  # answer only once the memory is held
        _os.read(ready_r, 1)
    if {in_child}:
        r, w = _os.pipe()
        if _os.fork() == 0:
            _os.close(r)
            data = _json.dumps(namespace["{entry}"](*args, **kwargs)).encode()
            with _os.fdopen(w, "wb") as pipe:
                pipe.write(data)
            _os._exit(0)
        _os.close(w)
        with _os.fdopen(r, "rb") as pipe:
            result = _json.loads(pipe.read())
    else:
        result = namespace["{entry}"](*args, **kwargs)
    return result
"""


def wrapped(instance: Instance, kind: str, **options: Any) -> dict[str, str]:
    """The reference's editable files with its entry module wrapped in CHILD_WRAPPER."""
    files = dict(instance.references[kind])
    entry = instance.entry_points[0]
    path = entry.module.replace(".", "/") + ".py"
    files[path] = CHILD_WRAPPER.format(reference=files[path], entry=entry.name, **options)
    return files


def forked_naive(instance: Instance) -> dict[str, str]:
    """The naive reference, run in a forked child; the parent only relays the answer."""
    return wrapped(instance, "naive", hogs=0, hog_mib=0, in_child=True)


def forked_hog(instance: Instance) -> dict[str, str]:
    """The efficient reference in the parent, while two children hold 55 % of the limit each
    (each under the limit, together over it, and under the kill threshold 128 MiB above)."""
    hog_mib = max(1, instance.template.mem_mib * 55 // 100)
    return wrapped(instance, "efficient", hogs=2, hog_mib=hog_mib, in_child=False)


@pytest.fixture(scope="module")
def sandbox() -> Sandbox:
    return sandbox_or_skip()


@cache
def quick_calibration(slug: str) -> CalibrationResult:
    """One round is enough here: the verdicts below do not sit near any threshold."""
    return calibrate(get_instance(slug, 1), real_sandbox(), rounds=1)


def grade_with(instance: Instance, source: dict[str, str], calibration: CalibrationResult) -> Any:
    try:
        return grade(instance, source, sandbox=real_sandbox(), calibration=calibration)
    except CanaryDrift:
        return grade(
            instance, source, sandbox=real_sandbox(), calibration=calibration, tolerate_drift=True
        )


@pytest.mark.timeout(600)
@pytest.mark.parametrize("slug", representative_slugs())
def test_hidden_children_never_pass_any_kind_of_template(sandbox: Sandbox, slug: str) -> None:
    instance = get_instance(slug, 1)
    assert instance.template.processes == 1
    calibration = quick_calibration(slug)
    for source in (forked_naive(instance), forked_hog(instance)):
        report = grade_with(instance, source, calibration)
        assert report["overall_pass"] is False, report
        assert report["sandbox"]["accounting"] in ("cgroup-v1", "cgroup-v2")
        functional = [t for t in report["tests"] if t["kind"] == "functional"]
        assert all(t["verdict"] == "RE" for t in functional), functional  # fork is refused
        assert "BlockingIOError" in functional[0]["message"]


@pytest.mark.timeout(600)
def test_where_children_are_allowed_their_cost_is_judged(sandbox: Sandbox) -> None:
    # A template that allows child processes (as a threaded runtime would): the forked naive
    # solution is correct, but its children's CPU time is counted, so it is too slow; the hog's
    # children's memory is counted, so it is over the limit.
    base = get_instance(CHEAP_TEMPLATE, 1)
    template = dataclasses.replace(base.template, processes=4)
    instance = dataclasses.replace(base, template=template)
    calibration = calibration_for(CHEAP_TEMPLATE)

    naive = grade_with(instance, forked_naive(instance), calibration)
    assert naive["overall_pass"] is False
    functional = [t for t in naive["tests"] if t["kind"] == "functional"]
    assert all(t["verdict"] == "OK" for t in functional), functional
    assert naive["efficiency"]["time_ok"] is False, naive["efficiency"]
    ratio = naive["efficiency"]["time_ratio"]  # None: a performance test hit its hard limit
    assert ratio is None or ratio > 2, naive["efficiency"]

    hog = grade_with(instance, forked_hog(instance), calibration)
    assert hog["overall_pass"] is False
    assert {t["verdict"] for t in hog["tests"]} == {"MLE"}, hog["tests"]
