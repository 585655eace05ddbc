"""The bank's own code (references, literal readings, starters) on every functional test of an
instance in one sandboxed process per entry point, for ``validate_bank``.

A participant's solution always gets a fresh process per test (``grading.grade_functional``):
that is what the verdicts of a trial mean. The bank's code is trusted and keeps no state
between calls, so validating it does not need that isolation, and paying a task runtime's
imports (pandas: about 0.45 s) once per workspace instead of once per test makes
``validate_bank --seeds 20`` affordable. The verdicts are the participant path's (``judge``
on each call's own reply); a run that dies as a whole (a limit, a crash) gives its verdict to
every test it held.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from evaluation.grading import FUNCTIONAL_CPU_S
from evaluation.runs import run_with_retries, runtime_limits
from evaluation.sandbox import calls_spec
from evaluation.sandbox.base import RunResult, RunStatus, Sandbox
from evaluation.spec import Instance, TestCase
from evaluation.verdicts import judge, last_json_line


def grade_functional_together(
    instance: Instance, workspace: dict[str, bytes], *, sandbox: Sandbox
) -> list[dict[str, Any]]:
    """``{"name", "verdict", "message"}`` for every functional test, in the instance's order."""
    functional = [c for c in instance.cases if c.kind == "functional"]
    groups: dict[str, list[TestCase]] = {}
    for case in functional:
        groups.setdefault(json.dumps(instance.entry(case).request(), sort_keys=True), []).append(
            case
        )
    per_test_cpu = min(instance.template.cpu_s, FUNCTIONAL_CPU_S)
    outcomes: dict[str, dict[str, Any]] = {}
    for entry, cases in groups.items():
        spec = calls_spec(
            workspace,
            json.loads(entry),
            [(c.args, c.kwargs) for c in cases],
            cpu_s=per_test_cpu * len(cases) + FUNCTIONAL_CPU_S,  # + one import allowance
            mem_mib=instance.template.mem_mib,
            **runtime_limits(instance),
        )
        [result], _ = run_with_retries(sandbox, [spec])
        for case, run in zip(cases, split_calls(result, len(cases)), strict=True):
            outcome = judge(case, spec, run, instance.compare)
            outcomes[case.name] = {
                "name": case.name,
                "verdict": str(outcome.verdict),
                "message": outcome.message,
            }
    return [outcomes[c.name] for c in functional]


def split_calls(result: RunResult, count: int) -> list[RunResult]:
    """One result per call of a ``calls`` run: each carries its own reply as its standard
    output; a run without a well-formed reply of ``count`` calls stands for each of them."""
    envelope = last_json_line(result.stdout) if result.status is RunStatus.OK else None
    replies = envelope.get("calls") if envelope and envelope.get("ok") else None
    if not isinstance(replies, list) or len(replies) != count:
        return [result] * count
    return [
        dataclasses.replace(result, stdout=(json.dumps(reply) + "\n").encode()) for reply in replies
    ]
