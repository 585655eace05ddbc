"""Turning one sandbox run of one test case into a verdict and a participant-readable message."""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any

from evaluation.sandbox.base import RunResult, RunSpec, RunStatus
from evaluation.spec import Compare, TestCase


class Verdict(enum.StrEnum):
    OK = "OK"
    WA = "WA"  # wrong answer
    RE = "RE"  # runtime error (including syntax errors and a missing entry point)
    TLE = "TLE"
    MLE = "MLE"
    OLE = "OLE"
    SE = "SE"  # sandbox error: never blamed on the solution


@dataclass(frozen=True)
class CaseOutcome:
    verdict: Verdict
    message: str


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )


def default_compare(expected: Any, actual: Any) -> tuple[bool, str]:
    """JSON equality; the message never reveals the expected value."""
    if actual == expected and type(actual) is type(expected):
        return True, ""
    if (
        isinstance(expected, float)
        and isinstance(actual, int | float)
        and not isinstance(actual, bool)
        and abs(actual - expected) <= 1e-9 * max(1.0, abs(expected))
    ):
        return True, ""
    if _type_name(actual) != _type_name(expected):
        return False, f"returned {_type_name(actual)}, expected {_type_name(expected)}"
    if isinstance(expected, list) and isinstance(actual, list) and len(actual) != len(expected):
        return False, f"returned {len(actual)} items; the expected list has a different length"
    return False, "returned a different result than expected"


def judge(case: TestCase, spec: RunSpec, result: RunResult, compare: Compare | None) -> CaseOutcome:
    status = result.status
    if status is RunStatus.SANDBOX_ERROR:
        return CaseOutcome(
            Verdict.SE, "the grading sandbox failed; this is not your solution's fault"
        )
    if status in (RunStatus.TLE_CPU, RunStatus.TLE_WALL):
        return CaseOutcome(Verdict.TLE, f"took longer than the {spec.cpu_s:g} s time limit")
    if status is RunStatus.MLE:
        return CaseOutcome(Verdict.MLE, f"used more than the {spec.mem_mib} MiB memory limit")
    if status is RunStatus.OLE:
        return CaseOutcome(Verdict.OLE, "printed more output than allowed (remove debug prints)")
    if status is RunStatus.FSIZE:
        return CaseOutcome(Verdict.RE, f"wrote a file larger than {spec.fsize_mib} MiB")
    envelope = last_json_line(result.stdout)
    if envelope is None:
        tail = result.stderr_tail.strip().splitlines()
        reason = tail[-1] if tail else f"exit code {result.exit_code}, signal {result.signal}"
        return CaseOutcome(Verdict.RE, f"the program stopped unexpectedly ({reason[:200]})")
    if not envelope.get("ok"):
        return CaseOutcome(Verdict.RE, str(envelope.get("message") or envelope.get("error"))[:300])
    if status is not RunStatus.OK:
        return CaseOutcome(Verdict.RE, f"the program exited with code {result.exit_code}")
    ok, message = (compare or default_compare)(case.expected, envelope.get("result"))
    return CaseOutcome(Verdict.OK, "") if ok else CaseOutcome(Verdict.WA, message[:300])


def last_json_line(stdout: bytes) -> dict[str, Any] | None:
    for line in reversed(stdout.decode("utf-8", "replace").strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and "ok" in value:
            return value
    return None
