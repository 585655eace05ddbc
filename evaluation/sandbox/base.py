"""The one sandbox interface every backend implements.

A backend runs a batch of :class:`RunSpec` (one fresh process each) and returns one
:class:`RunResult` per spec, in order. Measurements (CPU, wall, peak RSS) are taken outside the
sandboxed process. ``SANDBOX_ERROR`` is never the solution's fault: callers retry it.
"""

from __future__ import annotations

import abc
import enum
from dataclasses import dataclass, field


class RunStatus(enum.StrEnum):
    OK = "OK"  # exited 0 within every limit
    RE = "RE"  # non-zero exit or killed by a signal we did not send
    TLE_CPU = "TLE_CPU"
    TLE_WALL = "TLE_WALL"
    MLE = "MLE"
    OLE = "OLE"  # stdout/stderr beyond out_cap
    FSIZE = "FSIZE"  # wrote a file beyond fsize_mib
    SANDBOX_ERROR = "SANDBOX_ERROR"


@dataclass(frozen=True)
class RunSpec:
    """One process to run in the sandbox.

    ``files`` are placed read-only at ``/sandbox/<path>`` (relative paths; the harness puts a
    solver's workspace under ``/sandbox/work/``); the process
    starts in a fresh, size-limited, writable ``/tmp``. ``argv`` is run as given, e.g.
    ``["python3", "-I", "-S", "-B", "/sandbox/harness.py"]``; ``python3`` means the sandbox's
    interpreter. Nothing else from the host is visible: no network, no environment.
    """

    files: dict[str, bytes]
    argv: tuple[str, ...]
    stdin: bytes = b""
    cpu_s: float = 5.0
    wall_s: float = 0.0  # 0 means 2 * cpu_s + 1
    mem_mib: int = 512
    fsize_mib: int = 8
    processes: int = 1  # processes and threads the solution's tree may have (1: itself)
    harness_processes: int = 0  # trusted processes the harness adds (1: unittest's supervisor)
    out_cap: int = 1_000_000  # bytes of stdout (and of stderr) kept; more is OLE
    tmpfs_mib: int = 16
    # The task runtime (evaluation/runtimes): its packages are bound read-only at
    # /runtime/<name> ("" directory: the standard library only, nothing is bound).
    runtime: str = "python3.11-stdlib"
    runtime_dir: str = ""  # the host directory; the backend fills it in from the setting
    threads: int = 1  # BLAS/OpenMP threads (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, ...)

    @property
    def effective_wall_s(self) -> float:
        return self.wall_s or 2 * self.cpu_s + 1


@dataclass
class RunResult:
    status: RunStatus
    exit_code: int | None
    signal: int | None
    cpu_s: float
    wall_s: float
    peak_rss_kib: int
    stdout: bytes
    stderr_tail: str
    backend: str
    host_fingerprint: str
    detail: str = ""  # for SANDBOX_ERROR and kills: what happened, in one sentence
    extra: dict[str, object] = field(default_factory=dict)


class SandboxUnavailable(RuntimeError):
    """The backend cannot run here (missing binary, user namespaces disabled, no engine)."""


class Sandbox(abc.ABC):
    name: str = "abstract"
    # How the last self-test's run was measured: "cgroup-v1"/"cgroup-v2" (the whole process
    # tree), "container-cgroup", or "none: <why>" (then no child processes are allowed).
    accounting: str = ""

    @abc.abstractmethod
    def run_batch(self, specs: list[RunSpec]) -> list[RunResult]:
        """Run every spec in a fresh process; never raises for a solution's behaviour."""

    @abc.abstractmethod
    def self_test(self) -> tuple[bool, str]:
        """Run a trivial program; return (works, one-sentence detail)."""

    @property
    @abc.abstractmethod
    def safe(self) -> bool:
        """False for backends that do not isolate (the unsafe developer fallback)."""

    def fingerprint(self) -> str:
        """The host fingerprint results from this backend carry (cached per object).

        Calibrations are looked up by it before anything runs, so it comes from one trivial run.
        """
        cached: str | None = getattr(self, "_fingerprint", None)
        if cached is None:
            probe = RunSpec(files={}, argv=("python3", "-I", "-S", "-B", "-c", "pass"), cpu_s=2)
            cached = self.run_batch([probe])[0].host_fingerprint
            self._fingerprint = cached
        return cached
