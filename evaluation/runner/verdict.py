"""How a sandboxed run ended, as the runner reports it: status, figures, detail (stdlib only).

Imported by ``runner.py`` (same directory, ``python3 -I -S``); notes/sandbox.md §4.
"""

from __future__ import annotations

import base64

TYPE_CHECKING = False
if TYPE_CHECKING:
    from evaluation.runner import supervise
    from evaluation.runner.runner import Spec

# How bwrap, prlimit and our own fork report that the program itself never started. A solution
# could print these too; it then only earns retries of its own SANDBOX_ERROR.
LAUNCH_ERRORS = ("bwrap: ", "prlimit: failed to execute", "runner: cannot start")


def classify(
    outcome: supervise.Outcome, spec: Spec, mode: str, accounting: str = ""
) -> dict[str, object]:
    """Map how the process ended to a verdict (notes/sandbox.md §4)."""
    tail = outcome.stderr_tail.decode("utf-8", "replace")
    last = tail[-600:]
    detail = ""
    if not outcome.started or (outcome.exit_code != 0 and tail.startswith(LAUNCH_ERRORS)):
        status = "SANDBOX_ERROR"
        detail = "The sandbox failed to start the program: " + (tail.strip()[:300] or "no output")
    elif outcome.killed == "output":
        status, detail = "OLE", f"Output exceeded {spec.out_cap} bytes and was cut off."
    elif outcome.killed == "cpu" or outcome.cpu_s > spec.cpu_s:
        status, detail = "TLE_CPU", f"CPU time exceeded {spec.cpu_s:g} s."
    elif outcome.killed == "wall":
        status, detail = "TLE_WALL", f"Wall-clock time exceeded {spec.wall_s:g} s."
    elif outcome.oom_killed or (outcome.signal == 9 and mode != "unsafe" and not outcome.grouped):
        status, detail = "MLE", "Killed by SIGKILL from outside the sandbox (out of memory)."
    elif outcome.peak_rss_kib > spec.mem_mib * 1024 or (
        outcome.exit_code == 1 and "MemoryError" in last
    ):
        status, detail = "MLE", f"Memory use exceeded {spec.mem_mib} MiB."
    elif outcome.signal == 25 or (
        outcome.exit_code not in (0, None)
        and ("File too large" in last or "No space left on device" in last)
    ):
        status, detail = "FSIZE", f"A file or /tmp grew beyond its limit ({spec.fsize_mib} MiB)."
    elif outcome.exit_code == 0:
        status = "OK"
    else:
        status = "RE"
        detail = f"Killed by signal {outcome.signal}." if outcome.signal else ""
    extra: dict[str, object] = {
        "stdout_bytes": outcome.out_bytes,
        "stderr_bytes": outcome.err_bytes,
        "accounting": accounting,
    }
    if outcome.left_running:  # processes the program left behind, killed with its cgroup
        extra["left_running"] = outcome.left_running
    if mode == "docker":  # container-wide high-water mark (cgroup v2), for cross-checking
        try:
            with open("/sys/fs/cgroup/memory.peak", "rb") as handle:
                extra["cgroup_memory_peak_kib"] = int(handle.read()) // 1024
        except (OSError, ValueError):
            pass
    return {
        "status": status,
        "exit_code": outcome.exit_code,
        "signal": outcome.signal,
        "cpu_s": round(outcome.cpu_s, 6),
        "wall_s": round(outcome.wall_s, 6),
        "peak_rss_kib": outcome.peak_rss_kib,
        "stdout": base64.b64encode(outcome.stdout).decode("ascii"),
        "stderr_tail": tail,
        "detail": detail,
        "extra": extra,
    }
