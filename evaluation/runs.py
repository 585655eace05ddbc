"""Building sandbox runs of a solution against test cases, and running them with retries."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from evaluation.sandbox.base import RunResult, RunSpec, RunStatus, Sandbox
from evaluation.spec import Instance, TestCase

HARNESS = Path(__file__).resolve().parent / "runner" / "harness.py"
HARNESS_ARGV = ("python3", "-I", "-S", "-B", "/sandbox/harness.py")
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
    request = {
        "mode": "call",
        "module_file": "/sandbox/solution.py",
        "entry": instance.entry_point,
        "args": case.args,
        "kwargs": case.kwargs,
    }
    return RunSpec(
        files={"harness.py": HARNESS.read_bytes(), "solution.py": source},
        argv=HARNESS_ARGV,
        stdin=json.dumps(request).encode(),
        cpu_s=cpu_s,
        mem_mib=mem_mib,
    )


def unittest_spec(instance: Instance, source: bytes, *, cpu_s: float, mem_mib: int) -> RunSpec:
    """Run the participant's visible ``test_visible.py`` against ``source`` (output is shown)."""
    request = {"mode": "unittest", "test_file": "/sandbox/test_visible.py"}
    # The tests may read task_data.json or import legacy modules beside them: give the sandbox
    # every flat participant file, with the submitted source as solution.py.
    files = {
        name: text.encode()
        for name, text in instance.participant_files.items()
        if "/" not in name and name.endswith((".py", ".json", ".csv", ".txt"))
    }
    files.update({"harness.py": HARNESS.read_bytes(), "solution.py": source})
    return RunSpec(
        files=files,
        argv=HARNESS_ARGV,
        stdin=json.dumps(request).encode(),
        cpu_s=cpu_s,
        mem_mib=mem_mib,
    )


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
