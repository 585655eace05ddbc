"""Running an instance's visible tests against a solver's editable files, in the sandbox.

One definition for everyone who may run them: the participant's workspace (``ide_bridge``)
and the LLM arm's agent. Hidden tests are not among the participant files, so they cannot run
here. No database access: safe in a worker thread.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from evaluation.runs import run_with_retries, unittest_spec
from evaluation.runtimes import RuntimeMissing, require_runtime
from evaluation.sandbox import RunStatus, SandboxUnavailable, get_sandbox, parse_reply
from evaluation.sandbox.base import Sandbox
from evaluation.spec import Instance

logger = logging.getLogger(__name__)

RUN_CPU_S = 10.0  # per visible-test run; the sandbox kills the run after 2 * cpu + 1 s wall
OUTPUT_CAP = 64 * 1024  # characters of console output returned

FAILURE_STATUS = {
    RunStatus.TLE_CPU: ("time_limit", f"The tests were stopped after {RUN_CPU_S:.0f} s of CPU."),
    RunStatus.TLE_WALL: ("time_limit", "The tests were stopped: they took too long."),
    RunStatus.MLE: ("memory_limit", "The tests were stopped: they used too much memory."),
    RunStatus.OLE: ("output_limit", "The tests were stopped: they printed too much output."),
    RunStatus.FSIZE: ("output_limit", "The tests were stopped: they wrote too large a file."),
    RunStatus.SANDBOX_ERROR: ("sandbox_error", "The test runner failed; please try again."),
}


def cap_output(text: str) -> str:
    if len(text) <= OUTPUT_CAP:
        return text
    head, tail = text[: OUTPUT_CAP * 3 // 4], text[-OUTPUT_CAP // 4 :]
    return f"{head}\n\n… output truncated ({len(text) - OUTPUT_CAP} characters) …\n\n{tail}"


def run_visible_tests(
    instance: Instance, files: dict[str, str], *, sandbox: Sandbox | None = None
) -> dict[str, Any]:
    """The visible tests of ``instance`` against the editable ``files`` (path -> text, the
    whole set) in the full workspace tree. The answer: ``status`` (passed, failed, error,
    time_limit, memory_limit, output_limit, sandbox_error, unavailable), ``ok``, the counts,
    ``message`` and the console ``output`` (capped)."""
    empty: dict[str, Any] = {"ok": False, "tests_run": 0, "failures": 0, "errors": 0}
    try:
        sandbox = sandbox or get_sandbox()
    except SandboxUnavailable:
        message = "Running tests is not available right now; you can still submit."
        return empty | {"status": "unavailable", "message": message, "output": message}
    try:  # never run the tests on another interpreter than the one grading uses
        require_runtime(instance.template.runtime)
    except RuntimeMissing as exc:
        logger.error("visible tests refused: %s", exc)
        message = (
            f"Running tests is not available right now: the task's runtime "
            f"{instance.template.runtime} is not ready on the server; you can still submit."
        )
        return empty | {"status": "unavailable", "message": message, "output": message}
    spec = unittest_spec(instance, files, cpu_s=RUN_CPU_S, mem_mib=instance.template.mem_mib)
    started = time.monotonic()
    results, _ = run_with_retries(sandbox, [spec])
    result = results[0]
    elapsed_ms = round((time.monotonic() - started) * 1000)
    reply = parse_reply(result)
    printed = result.stderr_tail.strip()
    sections = [str(reply.get("output") or "").rstrip()]
    if printed:
        sections.append("--- printed by your code ---\n" + printed)
    body: dict[str, Any] = {**empty, "duration_ms": elapsed_ms}
    if result.status in FAILURE_STATUS:
        status, message = FAILURE_STATUS[result.status]
    elif reply.get("ok"):
        body.update({k: int(reply.get(k) or 0) for k in ("tests_run", "failures", "errors")})
        passed = body["tests_run"] > 0 and not body["failures"] and not body["errors"]
        body["ok"] = passed
        status, message = ("passed" if passed else "failed"), ""
    else:
        status = "error"
        message = str(reply.get("message") or "Your code could not be loaded.")
    if message:
        sections.append(message)
    output = "\n\n".join(s for s in sections if s)
    return body | {"status": status, "message": message, "output": cap_output(output)}
