"""Local bubblewrap backend (the default) and the runner client every backend shares.

One batch = one trusted runner process, ``/usr/bin/python3 -I -S -B evaluation/runner/runner.py``
(the system interpreter, never the venv: its RSS is the floor of every child's ``ru_maxrss``).
The batch goes to the runner's stdin as JSON (protocol in ``evaluation/runner/runner.py``), one
JSON envelope comes back on its stdout. The runner drops root to uid 65534 before it creates
any run directory or starts bwrap, so no sandboxed code ever runs as root.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import logging
import os
import platform
import stat
import subprocess
import time
from pathlib import Path
from typing import Any

from evaluation.sandbox.base import RunResult, RunSpec, RunStatus, Sandbox, SandboxUnavailable

logger = logging.getLogger(__name__)

RUNNER_DIR = Path(__file__).resolve().parent.parent / "runner"
RUNNER = RUNNER_DIR / "runner.py"
HARNESS = RUNNER_DIR / "harness.py"
RUNNER_FILES = (
    "runner.py",
    "supervise.py",
    "verdict.py",
    "rundirs.py",
    "cgroups.py",
    "seccomp_bpf.py",
    "harness.py",
)
SANDBOX_PYTHON = "/usr/bin/python3"
BWRAP = "/usr/bin/bwrap"
PRLIMIT = "/usr/bin/prlimit"
PROTOCOL = 2
RUNNER_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
RUNNER_SLACK_S = 30.0  # on top of the summed wall limits before the runner itself is killed


@functools.cache
def runner_digest() -> str:
    """Short hash of the runner, supervisor, seccomp policy and harness sources."""
    digest = hashlib.sha256()
    for name in RUNNER_FILES:
        digest.update(name.encode() + b"\0" + (RUNNER_DIR / name).read_bytes())
    return digest.hexdigest()[:12]


@functools.cache
def cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("model name", "Model", "uarch", "CPU part"):
            return value.strip()
    return platform.machine()


@functools.cache
def interpreter_version(python: str = SANDBOX_PYTHON) -> str:
    try:
        proc = subprocess.run(  # noqa: S603 - fixed argv, trusted interpreter
            [python, "-I", "-S", "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
            capture_output=True,
            timeout=30,
            env=RUNNER_ENV,
            check=True,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxUnavailable(f"The sandbox interpreter {python} does not run ({exc}).") from exc
    return proc.stdout.decode().strip()


def fingerprint(backend: str, python_version: str, *parts: str) -> str:
    """sha256-short of CPU model, kernel release, sandbox Python, backend and runner version."""
    fields = (cpu_model(), os.uname().release, python_version, backend, runner_digest(), *parts)
    return hashlib.sha256("\n".join(fields).encode()).hexdigest()[:16]


def encode_batch(
    mode: str,
    specs: list[RunSpec],
    tmp_parent: str | None = None,
    cgroups: bool = True,
    cpu_quota: float | None = None,
) -> bytes:
    """The runner's input: protocol 2 JSON (file contents and stdin base64)."""
    extra: dict[str, object] = {"tmp_parent": tmp_parent} if tmp_parent else {}
    if not cgroups:
        extra["cgroups"] = False
    if cpu_quota:
        extra["cpu_quota"] = cpu_quota
    return json.dumps(
        {
            "protocol": PROTOCOL,
            "mode": mode,
            **extra,
            "specs": [
                {
                    "files": {k: base64.b64encode(v).decode() for k, v in spec.files.items()},
                    "argv": list(spec.argv),
                    "stdin": base64.b64encode(spec.stdin).decode(),
                    "cpu_s": spec.cpu_s,
                    "wall_s": spec.effective_wall_s,
                    "mem_mib": spec.mem_mib,
                    "fsize_mib": spec.fsize_mib,
                    "processes": spec.processes,
                    "harness_processes": spec.harness_processes,
                    "out_cap": spec.out_cap,
                    "tmpfs_mib": spec.tmpfs_mib,
                    "threads": spec.threads,
                    **_runtime_field(spec, mode),
                }
                for spec in specs
            ],
        }
    ).encode()


def runtime_dir(spec: RunSpec) -> str:
    """The host directory of the spec's runtime ("" for the standard library)."""
    from evaluation.runtimes import get_runtime, install_dir

    if get_runtime(spec.runtime).lock is None:
        return ""
    return spec.runtime_dir or str(install_dir(spec.runtime))


def _runtime_field(spec: RunSpec, mode: str) -> dict[str, object]:
    """The runner's ``runtime`` field, for runtimes with packages: the host directory (docker:
    where the backend mounted it in the container)."""
    directory = runtime_dir(spec)
    if not directory:
        return {}
    if mode == "docker":
        directory = f"/runtime/{spec.runtime}"
    return {"runtime": {"name": spec.runtime, "dir": directory}}


def sandbox_errors(specs: list[RunSpec], detail: str, backend: str, fp: str) -> list[RunResult]:
    return [
        RunResult(RunStatus.SANDBOX_ERROR, None, None, 0.0, 0.0, 0, b"", "", backend, fp, detail)
        for _ in specs
    ]


def decode_envelope(stdout: bytes, specs: list[RunSpec], backend: str, fp: str) -> list[RunResult]:
    """Turn the runner's last stdout line into results; anything odd is SANDBOX_ERROR."""
    lines = stdout.strip().splitlines()
    try:
        envelope = json.loads(lines[-1]) if lines else None
    except ValueError:
        envelope = None
    if not isinstance(envelope, dict):
        return sandbox_errors(specs, "The runner printed no result envelope.", backend, fp)
    if "error" in envelope:
        return sandbox_errors(specs, str(envelope["error"]), backend, fp)
    raw = envelope.get("results")
    if not isinstance(raw, list) or len(raw) != len(specs):
        return sandbox_errors(specs, "The runner returned a malformed result list.", backend, fp)
    common = {"runner_version": envelope.get("runner_version"), "runner_uid": envelope.get("uid")}
    return [_result(item, backend, fp, common) for item in raw]


def _result(item: dict[str, Any], backend: str, fp: str, common: dict[str, Any]) -> RunResult:
    return RunResult(
        status=RunStatus(item["status"]),
        exit_code=item["exit_code"],
        signal=item["signal"],
        cpu_s=float(item["cpu_s"]),
        wall_s=float(item["wall_s"]),
        peak_rss_kib=int(item["peak_rss_kib"]),
        stdout=base64.b64decode(item["stdout"]),
        stderr_tail=str(item["stderr_tail"]),
        backend=backend,
        host_fingerprint=fp,
        detail=str(item.get("detail", "")),
        extra={**common, **dict(item.get("extra", {}))},
    )


class RunnerBackend(Sandbox):
    """A backend that hands the batch to ``runner.py`` on this host in ``mode``."""

    mode = "bwrap"

    def __init__(
        self, *, tmp_parent: str | None = None, cgroups: bool = True, cpu_quota: float | None = None
    ) -> None:
        # Where the runner creates its 0700 run directories (default /tmp); it must be
        # writable by the runner's uid (65534 when the worker is root).
        self.tmp_parent = tmp_parent
        self.cgroups = cgroups  # False: no per-run cgroup, so no child processes at all
        self.cpu_quota = cpu_quota  # share of one CPU each run may use (wall time only)

    def run_batch(self, specs: list[RunSpec]) -> list[RunResult]:
        if not specs:
            return []
        fp = self.host_fingerprint
        timeout = sum(spec.effective_wall_s + 3.0 for spec in specs) + RUNNER_SLACK_S
        try:
            proc = subprocess.run(  # noqa: S603 - fixed argv: the trusted runner
                [SANDBOX_PYTHON, "-I", "-S", "-B", str(RUNNER)],
                input=encode_batch(self.mode, specs, self.tmp_parent, self.cgroups, self.cpu_quota),
                capture_output=True,
                env=RUNNER_ENV,
                cwd="/",
                timeout=timeout,
                start_new_session=True,
            )
        except subprocess.TimeoutExpired:
            detail = f"The runner did not finish within {timeout:.0f} s and was killed."
            return sandbox_errors(specs, detail, self.name, fp)
        except OSError as exc:
            return sandbox_errors(specs, f"The runner could not start ({exc}).", self.name, fp)
        if proc.returncode != 0:
            logger.error("sandbox runner exited %s: %s", proc.returncode, proc.stderr[-2000:])
        return decode_envelope(proc.stdout, specs, self.name, fp)

    @property
    def host_fingerprint(self) -> str:
        return fingerprint(self.name, interpreter_version())

    def fingerprint(self) -> str:
        """Same value every result carries, computed without a sandbox run."""
        return self.host_fingerprint

    def probe(self) -> tuple[dict[str, Any] | None, str]:
        """Run an isolation probe: (what it saw inside, or None; one-sentence detail)."""
        code = (
            "import json, os, socket\n"
            "try:\n    socket.socket(socket.AF_INET).close(); net = True\n"
            "except OSError:\n    net = False\n"
            "print(json.dumps({'uid': os.getuid(), 'etc': os.path.exists('/etc'), 'net': net,"
            " 'env': sorted(os.environ)}))\n"
        )
        spec = RunSpec(files={}, argv=("python3", "-I", "-S", "-B", "-c", code), cpu_s=5.0)
        started = time.monotonic()
        (result,) = self.run_batch([spec])
        elapsed = f"{(time.monotonic() - started) * 1000:.0f} ms"
        self.accounting = str(result.extra.get("accounting", ""))
        if result.status != RunStatus.OK:
            reason = result.detail or result.stderr_tail.strip()[-300:]
            return None, f"The probe ended {result.status.value} after {elapsed}: {reason}"
        try:
            seen = json.loads(result.stdout)
        except ValueError:
            return None, f"The probe printed something unexpected: {result.stdout[:200]!r}"
        return seen, f"probe ran in {elapsed}"


class LocalBwrapBackend(RunnerBackend):
    """bubblewrap + seccomp + rlimits, one fresh sandbox per run (notes/sandbox.md §3)."""

    name = "bwrap"
    mode = "bwrap"

    def __init__(
        self, *, tmp_parent: str | None = None, cgroups: bool = True, cpu_quota: float | None = None
    ) -> None:
        super().__init__(tmp_parent=tmp_parent, cgroups=cgroups, cpu_quota=cpu_quota)
        for path, package in ((BWRAP, "bubblewrap"), (PRLIMIT, "util-linux"),
                              (SANDBOX_PYTHON, "python3")):  # fmt: skip
            if not os.access(path, os.X_OK):
                raise SandboxUnavailable(
                    f"{path} is missing; install the Debian package {package} "
                    "or choose another EVALUATION_SANDBOX_BACKEND."
                )
        if os.stat(BWRAP).st_mode & stat.S_ISUID:
            raise SandboxUnavailable(
                f"{BWRAP} is setuid root, which this backend refuses (CVE-2016-8659 class); "
                "use the unprivileged Debian build with user namespaces."
            )

    @property
    def safe(self) -> bool:
        return True

    def self_test(self) -> tuple[bool, str]:
        seen, detail = self.probe()
        if seen is None:
            return False, detail + " (are unprivileged user namespaces enabled?)"
        if seen.get("uid") != 65534 or seen.get("etc") or seen.get("net"):
            return False, f"The sandbox is not isolated: it saw {seen}."
        return True, (
            f"bwrap sandbox works: uid 65534, no /etc, no network; {detail}; "
            f"accounting: {self.accounting}."
        )
