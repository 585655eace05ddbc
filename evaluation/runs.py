"""Building sandbox runs of a solution against test cases, and running them with retries."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from evaluation.runtimes import blas_threads
from evaluation.sandbox import call_spec
from evaluation.sandbox import unittest_spec as sandbox_unittest_spec
from evaluation.sandbox.base import RunResult, RunSpec, RunStatus, Sandbox
from evaluation.spec import Instance, TestCase

SANDBOX_RETRIES = 2  # extra attempts for a run that ended in SANDBOX_ERROR


def empty_solution(entry_point: str) -> bytes:
    """A solution that does nothing: the harness's own cost, subtracted from every measurement."""
    return f"def {entry_point}(*args, **kwargs):\n    return None\n".encode()


def case_spec(
    instance: Instance,
    source: bytes,
    case: TestCase,
    *,
    cpu_s: float,
    mem_mib: int,
) -> RunSpec:
    """One fresh process calling the entry point on this case's input. The expected output
    stays on the host."""
    return call_spec(
        source,
        instance.entry_point,
        case.args,
        case.kwargs,
        cpu_s=cpu_s,
        mem_mib=mem_mib,
        **runtime_limits(instance),
    )


def runtime_limits(instance: Instance) -> dict[str, Any]:
    """The template's runtime, its process allowance, and the BLAS/OpenMP threads that fit in
    it (one unless the template allows more processes, see ``blas_threads``)."""
    template = instance.template
    return {
        "processes": template.processes,
        "runtime": template.runtime,
        "threads": blas_threads(template.processes),
    }


def unittest_spec(instance: Instance, source: bytes, *, cpu_s: float, mem_mib: int) -> RunSpec:
    """Run the participant's visible ``test_visible.py`` against ``source`` (output is shown).

    The tests may read task_data.json or import legacy modules beside them, so the sandbox gets
    every flat participant file, with the submitted source as solution.py.
    """
    spec = sandbox_unittest_spec(
        source,
        instance.participant_files["test_visible.py"],
        cpu_s=cpu_s,
        mem_mib=mem_mib,
        **runtime_limits(instance),
    )
    extra = {
        name: text.encode()
        for name, text in instance.participant_files.items()
        if "/" not in name and name.endswith((".py", ".json", ".csv", ".txt"))
    }
    return replace(spec, files={**extra, **spec.files})


def accounting_of(results: Sequence[RunResult]) -> set[str]:
    """How the runs were measured: ``cgroup-v1``/``cgroup-v2`` (the whole process tree) or
    ``none: <why>`` (no child processes were allowed)."""
    return {str(r.extra["accounting"]) for r in results if r.extra.get("accounting")}


def run_with_retries(sandbox: Sandbox, specs: Sequence[RunSpec]) -> tuple[list[RunResult], int]:
    """Run specs; re-run those that ended in SANDBOX_ERROR (never the solution's fault).

    Returns the results in order and how many retries were needed.
    """
    results = sandbox.run_batch(list(specs))
    retries = 0
    for _ in range(SANDBOX_RETRIES):
        failed = [i for i, r in enumerate(results) if r.status is RunStatus.SANDBOX_ERROR]
        if not failed:
            break
        retries += len(failed)
        again = sandbox.run_batch([specs[i] for i in failed])
        for index, result in zip(failed, again, strict=True):
            results[index] = result
    return results, retries
