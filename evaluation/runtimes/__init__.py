"""Task runtimes: which Python packages a sandboxed solution can import.

A template names one runtime (``runtime = "..."`` in template.toml). Every runtime runs on the
sandbox's system interpreter (``/usr/bin/python3.11``); a runtime with a lock file adds the
packages that lock pins, installed once at set-up (``python -m evaluation.runtimes install
--all``) into ``<EVALUATION_RUNTIMES_DIR>/<name>/site-packages``, read-only, and bound read-only
at ``/runtime/<name>`` in the sandbox of each run that uses it.

No Django needed: the engine also runs from plain Python (then ``$EVALUATION_RUNTIMES_DIR`` or
the default). The default is ``var/runtimes`` in the repository, unless the sandbox's uid 65534
cannot reach it (bubblewrap opens the directory as that uid, so every parent must be
world-searchable; a checkout under ``/root`` is not): then ``/var/lib/haieval/runtimes/<hash of
the repository path>`` (root's, as the runner is).
"""

from __future__ import annotations

import enum
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

PACKAGE_DIR = Path(__file__).resolve().parent
LOCKS_DIR = PACKAGE_DIR / "locks"
REPO_DIR = PACKAGE_DIR.parent.parent
SYSTEM_PYTHON = "/usr/bin/python3.11"
DEFAULT_RUNTIME = "python3.11-stdlib"
SANDBOX_ROOT = "/runtime"  # where a runtime's directory appears inside the sandbox
SYSTEM_DIR = Path("/var/lib/haieval/runtimes")  # the default for unreachable checkouts
STAMP = ".lock-sha256"


@dataclass(frozen=True)
class Runtime:
    name: str
    description: str
    lock: Path | None = None  # None: the interpreter's standard library only

    @property
    def lock_sha256(self) -> str:
        """sha256 of the lock file ("" for the standard library)."""
        return hashlib.sha256(self.lock.read_bytes()).hexdigest() if self.lock else ""

    @property
    def sandbox_path(self) -> str:
        """Where its site-packages appear inside the sandbox ("" without packages)."""
        return f"{SANDBOX_ROOT}/{self.name}/site-packages" if self.lock else ""


REGISTRY: dict[str, Runtime] = {
    runtime.name: runtime
    for runtime in (
        Runtime(DEFAULT_RUNTIME, "the system Python 3.11 and its standard library only"),
        Runtime(
            "python3.11-data",
            "Python 3.11 with pinned numpy, pandas, scipy and scikit-learn (MLE and DS tracks)",
            LOCKS_DIR / "python3.11-data.txt",
        ),
    )
}


# Thread pools that can start at once in one process: numpy's OpenBLAS, scipy's own OpenBLAS,
# and scikit-learn's OpenMP. Each pool of n threads adds n - 1 to the process's own thread.
THREAD_POOLS = 3


def blas_threads(processes: int) -> int:
    """BLAS/OpenMP threads per pool for a solution allowed ``processes`` processes and threads
    (itself included): 1 unless every pool's extra threads fit in the allowance."""
    return 1 + max(0, processes - 1) // THREAD_POOLS


class State(enum.StrEnum):
    INSTALLED = "installed"
    MISSING = "missing"
    STALE = "stale"  # installed from another version of its lock file


class RuntimeMissing(RuntimeError):
    """The runtime a template needs is not installed (or is stale); the message says what to do."""


def get_runtime(name: str) -> Runtime:
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(REGISTRY)
        raise KeyError(f"Unknown runtime {name!r}; it must be one of {known}.") from None


def unreachable_parent(path: Path) -> Path | None:
    """The first existing parent of ``path`` that other users (uid 65534) cannot search."""
    for parent in reversed(path.parents):
        try:
            mode = parent.stat().st_mode
        except OSError:
            break  # not created yet: install makes it 0755
        if not mode & stat.S_IXOTH:
            return parent
    return None


def runtimes_dir() -> Path:
    """The directory runtimes are installed under (setting ``EVALUATION_RUNTIMES_DIR``)."""
    from django.conf import settings

    try:
        configured = getattr(settings, "EVALUATION_RUNTIMES_DIR", None)
    except ImproperlyConfigured:  # plain Python, no settings
        configured = None
    configured = configured or os.environ.get("EVALUATION_RUNTIMES_DIR")
    if configured:
        return Path(configured).resolve()
    default = REPO_DIR / "var" / "runtimes"
    if unreachable_parent(default) is None:
        return default
    return SYSTEM_DIR / hashlib.sha256(str(REPO_DIR).encode()).hexdigest()[:12]


def install_dir(name: str) -> Path:
    return runtimes_dir() / name


def state(name: str) -> tuple[State, str]:
    """(state, one sentence) for the runtime called ``name``."""
    runtime = get_runtime(name)
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return State.MISSING, f"The runtime {name} needs {SYSTEM_PYTHON}, which is not installed."
    if runtime.lock is None:
        return State.INSTALLED, f"{name}: {runtime.description}."
    directory = install_dir(name)
    command = f"python -m evaluation.runtimes install {name}"
    try:
        stamp = (directory / STAMP).read_text().strip()
    except OSError:
        return State.MISSING, (
            f"The runtime {name} is not installed in {directory}; run `{command}` "
            "(./dev run and ./dev test do it)."
        )
    blocked = unreachable_parent(directory)
    if blocked is not None:
        return State.MISSING, (
            f"The runtime {name} in {directory} cannot be reached by the sandbox's uid 65534 "
            f"({blocked} is not searchable by others); set EVALUATION_RUNTIMES_DIR elsewhere "
            "or `chmod o+x` it."
        )
    if stamp != runtime.lock_sha256:
        return State.STALE, (
            f"The runtime {name} in {directory} was installed from an older lock file; "
            f"run `{command}` again."
        )
    return State.INSTALLED, f"{name}: {runtime.description}, installed in {directory}."


def require_runtime(name: str) -> Runtime:
    """The runtime, if it can run now; otherwise ``RuntimeMissing`` with the sentence."""
    current, sentence = state(name)
    if current is not State.INSTALLED:
        raise RuntimeMissing(sentence)
    return get_runtime(name)


def statuses(used: set[str] | None = None) -> dict[str, dict[str, str]]:
    """Every runtime's state for /healthz/ and the worker's start-up log.

    ``status`` is ``ok`` when installed, ``error`` when missing or stale and a template in
    ``used`` needs it, ``warning`` when no such template does.
    """
    report: dict[str, dict[str, str]] = {}
    for name in REGISTRY:
        current, sentence = state(name)
        if current is State.INSTALLED:
            status = "ok"
        else:
            status = "error" if used is None or name in used else "warning"
        report[name] = {"status": status, "state": current.value, "detail": sentence}
    return report
