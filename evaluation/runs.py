"""Building sandbox runs of a solution against test cases, and running them with retries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evaluation.runtimes import blas_threads
from evaluation.sandbox import call_spec
from evaluation.sandbox import unittest_spec as sandbox_unittest_spec
from evaluation.sandbox.base import RunResult, RunSpec, RunStatus, Sandbox
from evaluation.spec import EntryPoint, Instance, TestCase

SANDBOX_RETRIES = 2  # extra attempts for a run that ended in SANDBOX_ERROR


Files = dict[str, str]  # workspace path -> text: a solver's editable files


def workspace_of(instance: Instance, files: Files) -> dict[str, bytes]:
    """The whole workspace a run sees: the instance's read-only files and images with the
    solver's editable files over them (encoded once per grading, reused by every run)."""
    workspace = {path: text.encode() for path, text in instance.participant_files.items()}
    workspace.update(instance.images)
    workspace.update({path: text.encode() for path, text in files.items()})
    return workspace


def _module_path(module: str) -> str:
    return module.replace(".", "/") + ".py"


def empty_workspace(instance: Instance, entry: EntryPoint) -> dict[str, bytes]:
    """A solution that does nothing, called the same way: the harness's own cost (and the
    workspace's), subtracted from every measurement."""
    if entry.kind == "cli":
        stub = "# does nothing\n"
    elif entry.kind == "wsgi":
        stub = (
            f"def {entry.name}(environ, start_response):\n"
            "    start_response('200 OK', [])\n    return [b'']\n"
        )
    else:
        stub = f"def {entry.name}(*args, **kwargs):\n    return None\n"
    workspace = workspace_of(instance, {})
    path = _module_path(entry.module)
    if path not in workspace and f"{path[:-3]}/__init__.py" in workspace:
        path = f"{path[:-3]}/__init__.py"
    workspace[path] = stub.encode()
    return workspace


def case_spec(
    instance: Instance,
    workspace: dict[str, bytes],
    case: TestCase,
    *,
    cpu_s: float,
    mem_mib: int,
) -> RunSpec:
    """One fresh process calling the case's entry point on its input in ``workspace`` (from
    ``workspace_of``). The expected output stays on the host."""
    return call_spec(
        workspace,
        instance.entry(case).request(),
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


def unittest_spec(instance: Instance, files: Files, *, cpu_s: float, mem_mib: int) -> RunSpec:
    """Run the participant's visible tests against their editable ``files`` in the whole
    workspace (the tests may read data files or import the project's modules)."""
    workspace = workspace_of(instance, files)
    tests = {path: workspace.pop(path) for path in instance.visible_tests}
    return sandbox_unittest_spec(
        workspace, tests, cpu_s=cpu_s, mem_mib=mem_mib, **runtime_limits(instance)
    )


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
