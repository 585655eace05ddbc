"""The trusted runner: runs a batch of programs, each in a fresh sandboxed process.

Started by a backend as ``/usr/bin/python3 -I -S -B evaluation/runner/runner.py`` (stdlib only,
never the project's venv: the runner must stay small because its RSS is the floor of every
child's ``ru_maxrss``, notes/sandbox.md §4 pitfall 1). Not imported by Django.

Protocol (version 2). Standard input (or the file after ``--batch``) is one JSON object::

    {"protocol": 2, "mode": "bwrap" | "unsafe" | "docker",
     "specs": [{"files": {"solution.py": "<base64>", ...}, "argv": ["python3", ...],
                "stdin": "<base64>", "cpu_s": 2.0, "wall_s": 5.0, "mem_mib": 512,
                "fsize_mib": 8, "processes": 1, "out_cap": 1000000, "tmpfs_mib": 16,
                "threads": 1, "runtime": {"name": "python3.11-data", "dir": "/srv/rt/..."}},
               ...]}

``threads`` (default 1) is what ``OPENBLAS_NUM_THREADS``, ``OMP_NUM_THREADS`` and the like say
in the program's environment. An optional ``runtime`` names a task runtime's host directory
(``site-packages`` inside), bound read-only at ``/runtime/<name>`` for that run only (mode
``unsafe``: linked at ``<rundir>/runtime/<name>``; mode ``docker``: the backend mounts it there).

``processes`` is how many processes and threads the solution's own tree may have (1: none
besides itself); ``harness_processes`` (default 0) are the harness's own on top (1 in unittest
mode: its supervisor). Without a per-run cgroup the runner allows 1 whatever is asked (nothing
could measure the others).

``wall_s`` is the effective wall limit (the backend resolves 0). An optional top-level
``"tmp_parent"`` names where run directories are created (default ``/tmp``), and
``"cgroups": false`` switches per-run cgroups off (no child processes then), and
``"cpu_quota": 0.5`` lets each run use at most that share of one CPU (a cgroup CPU quota; CPU
time, which grading judges, is not changed by it, only wall time). Standard output is
one JSON line::

    {"protocol": 2, "runner_version": "...", "python": "3.11.2", "mode": "bwrap", "uid": 65534,
     "accounting": "cgroup-v1" | "cgroup-v2" | "none: <why>",
     "results": [{"status": "OK", "exit_code": 0, "signal": null, "cpu_s": 0.03,
                  "wall_s": 0.04, "peak_rss_kib": 10240, "stdout": "<base64>",
                  "stderr_tail": "...", "detail": "", "extra": {...}}, ...]}

or, when the batch itself cannot run, ``{"protocol": 2, "error": "<one sentence>"}`` and exit 2.

Per run (mode ``bwrap``): a fresh 0700 RUNDIR holds the spec's files, which are bound read-only
at ``/sandbox/<name>``; bwrap gets a seccomp denylist (``seccomp_bpf.py``), a size-limited
``/tmp``, no ``/proc``, and only the interpreter, its standard library and shared libraries from
``/usr``. The run joins its own cgroup (``cgroups.py``) before bwrap starts (its process is
spawned while the previous run runs), so CPU, peak memory and the process count (a ``pids``
limit) are the whole tree's; without a cgroup, ``prlimit --nproc`` inside the user namespace
(counted per namespace) allows the solution no child process at all. ``supervise.py`` watches
CPU, wall and output from outside and SIGKILLs the program (never bwrap) on overrun. If started
as root, the runner first delegates the cgroups and drops to uid/gid 65534 with
``no_new_privs``, so no sandboxed code runs as root.
Mode ``unsafe`` runs the same programs with rlimits only (NOT a sandbox, developer machines);
mode ``docker`` runs inside a throw-away container as root and drops each child to 65534.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import os
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

TYPE_CHECKING = False
if TYPE_CHECKING:
    from evaluation.runner import cgroups, rundirs, seccomp_bpf, supervise
    from evaluation.runner.verdict import classify
else:  # siblings, found through the line above (no `typing` import: it costs RSS)
    import cgroups
    import rundirs
    import seccomp_bpf
    import supervise
    from verdict import classify

RUNNER_VERSION = "2.0"
PROTOCOL = 2
MAX_PROCESSES = 64
# Tasks of the run's cgroup that are neither the solution's nor the harness's: bwrap outside the
# sandbox (its child becomes the program).
SANDBOX_TASKS = 1
SANDBOX_UID = 65534
MIB = 1024 * 1024
AS_GRACE_MIB = 128  # interpreter, stack, allocator slack (MLE is judged on peak RSS)
STACK_MIB = 64
BWRAP = "/usr/bin/bwrap"
PRLIMIT = "/usr/bin/prlimit"
SYSTEM_BIN = "/usr/bin"
MODES = ("bwrap", "unsafe", "docker")
SANDBOX_ENV = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/tmp",  # noqa: S108 - the sandbox's own private tmpfs
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "MALLOC_ARENA_MAX": "1",  # no 64 MiB address-space reservation per thread
}
# Thread pools of numerical libraries: one thread unless the template allows more processes.
THREAD_VARS = (
    "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
)  # fmt: skip
RUNTIME_ROOT = "/runtime"
STATUS_FD, SECCOMP_FD = 4, 3
SANDBOX_TMP = "/tmp"  # noqa: S108 - inside the sandbox: its own size-limited tmpfs
SANDBOX_SHM = "/dev/shm"  # noqa: S108 - likewise, 1 MiB
HOST_TMP = "/tmp"  # noqa: S108 - parent of the 0700 run directories (mkdir, random name)


class BatchError(Exception):
    """The batch cannot run at all; reported as ``{"error": ...}``."""


class Spec:
    """One validated entry of ``specs`` (see the module docstring)."""

    def __init__(self, raw: object) -> None:
        if not isinstance(raw, dict):
            raise BatchError("every spec must be a JSON object")
        try:
            self.files = {_check_path(k): base64.b64decode(v) for k, v in raw["files"].items()}
            self.argv = [str(a) for a in raw["argv"]]
            self.stdin = base64.b64decode(raw.get("stdin", ""))
            self.cpu_s, self.wall_s = float(raw["cpu_s"]), float(raw["wall_s"])
            self.mem_mib, self.fsize_mib = int(raw["mem_mib"]), int(raw["fsize_mib"])
            self.processes, self.out_cap = int(raw.get("processes", 1)), int(raw["out_cap"])
            self.harness_processes = int(raw.get("harness_processes", 0))
            self.tmpfs_mib = int(raw.get("tmpfs_mib", 16))
            self.threads = int(raw.get("threads", 1))
            self.runtime = _check_runtime(raw.get("runtime"))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise BatchError(f"a spec is malformed ({exc!r})") from None
        if not self.argv:
            raise BatchError("a spec has an empty argv")
        if not 1 <= self.processes <= MAX_PROCESSES or self.harness_processes not in (0, 1):
            raise BatchError(f"a spec's processes must be in [1, {MAX_PROCESSES}]")
        if not 1 <= self.threads <= MAX_PROCESSES:
            raise BatchError(f"a spec's threads must be in [1, {MAX_PROCESSES}]")

    def env(self) -> dict[str, str]:
        return dict(SANDBOX_ENV, **dict.fromkeys(THREAD_VARS, str(self.threads)))

    def rlimits(self, nproc: int | None = None) -> list[tuple[int, int]]:
        limits = [
            (resource.RLIMIT_CPU, math.ceil(self.cpu_s) + 1),
            (resource.RLIMIT_AS, (self.mem_mib + AS_GRACE_MIB) * MIB),
            (resource.RLIMIT_FSIZE, self.fsize_mib * MIB),
            (resource.RLIMIT_CORE, 0),
            (resource.RLIMIT_NOFILE, 64),
            (resource.RLIMIT_STACK, STACK_MIB * MIB),  # deep recursion: RecursionError first
        ]
        if nproc is not None:
            limits.append((resource.RLIMIT_NPROC, nproc))
        return limits


def _check_name(name: str) -> str:
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise BatchError(f"invalid file name {name!r}: files must have flat names")
    return name


def _check_path(name: str) -> str:
    """A file's relative path (``work/app/pricing.py``): no empty, ``.`` or ``..`` part."""
    if not name or "\0" in name or any(p in ("", ".", "..") for p in name.split("/")):
        raise BatchError(f"invalid file name {name!r}: files must have plain relative paths")
    return name


def _check_runtime(raw: object) -> tuple[str, str] | None:
    """(name, host directory) of the run's task runtime, or None (the standard library)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise BatchError("a spec's runtime must be an object with name and dir")
    name, directory = _check_name(str(raw["name"])), str(raw["dir"])
    if not os.path.isabs(directory) or not os.path.isdir(directory):
        raise BatchError(f"the runtime directory {directory!r} does not exist")
    return name, os.path.realpath(directory)


def _resolve_argv(argv: list[str], root: str) -> list[str]:
    """``python3`` means the sandbox's interpreter; ``/sandbox/x`` maps to ``root/x``."""
    out = [a if not a.startswith("/sandbox/") else os.path.join(root, a[9:]) for a in argv]
    if out[0] in ("python3", "python"):
        out[0] = sys.executable  # the runner is started with the sandbox's interpreter
    elif "/" not in out[0]:
        out[0] = os.path.join(SYSTEM_BIN, out[0])
    return out


def _system_binds(with_prlimit: bool) -> list[str]:
    """bwrap arguments showing the interpreter and what it loads; nothing else of ``/usr``.

    The interpreter, ``prlimit`` (only without a cgroup), the standard library, the shared
    libraries and the time zone database are bound read-only; ``/usr/local``, ``/usr/share``,
    other programs and other Pythons' packages are not there at all.
    """
    python = os.path.realpath(sys.executable)
    paths = [python, os.path.dirname(os.path.realpath(os.__file__))]
    if with_prlimit:
        paths.append(PRLIMIT)
    multiarch = getattr(sys.implementation, "_multiarch", "")
    for lib in (f"/usr/lib/{multiarch}", "/usr/lib64", "/usr/share/zoneinfo"):
        if os.path.isdir(lib) and lib != "/usr/lib/":
            paths.append(os.path.realpath(lib))
    argv: list[str] = []
    for path in dict.fromkeys(paths):
        argv += ["--ro-bind", path, path]
    if os.path.islink(sys.executable):
        argv += ["--symlink", os.readlink(sys.executable), sys.executable]
    for top in ("lib", "lib64", "bin", "sbin"):
        if os.path.islink("/" + top):
            argv += ["--symlink", os.readlink("/" + top), "/" + top]
        elif os.path.isdir("/" + top):
            argv += ["--ro-bind", "/" + top, "/" + top]
    return argv


def _bwrap_argv(
    spec: Spec, rundir: str, names: list[str], processes: int, grouped: bool
) -> list[str]:
    argv = [BWRAP, "--json-status-fd", str(STATUS_FD), "--unshare-all", "--unshare-user"]
    argv += ["--die-with-parent", "--new-session", "--as-pid-1", "--cap-drop", "ALL"]
    argv += ["--disable-userns", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    argv += ["--hostname", "sandbox", "--clearenv"]
    for key, value in spec.env().items():
        argv += ["--setenv", key, value]
    argv += _system_binds(with_prlimit=not grouped)
    if spec.runtime is not None:
        name, directory = spec.runtime
        argv += ["--ro-bind", directory, f"{RUNTIME_ROOT}/{name}"]
    tmpfs = spec.tmpfs_mib * MIB
    argv += ["--dev", "/dev", "--size", str(MIB), "--tmpfs", SANDBOX_SHM]
    argv += ["--remount-ro", "/dev", "--size", str(tmpfs), "--tmpfs", SANDBOX_TMP]
    for name in names:
        argv += ["--ro-bind", os.path.join(rundir, name), "/sandbox/" + name]
    argv += ["--remount-ro", "/", "--chdir", SANDBOX_TMP, "--seccomp", str(SECCOMP_FD), "--"]
    if not grouped:  # the cgroup's pids limit does it otherwise, without another exec
        # RLIMIT_NPROC counts per user namespace: the harness's own plus the solution's.
        argv += [PRLIMIT, f"--nproc={spec.harness_processes + processes}", "--"]
    return argv + _resolve_argv(spec.argv, "/sandbox")


def _count_processes(uid: int) -> int:
    count = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                count += os.stat("/proc/" + entry).st_uid == uid
    return count


class Batch:
    """What every run of one batch shares: mode, seccomp policy, run-directory parent, cgroups."""

    def __init__(
        self, mode: str, tmp_parent: str, use_cgroups: bool = True, cpu_quota: float | None = None
    ) -> None:
        self.mode, self.tmp_parent, self.use_cgroups = mode, tmp_parent, use_cgroups
        self.cpu_quota = cpu_quota
        self.seccomp = b""
        self.layout: cgroups.Layout | None = None
        self.accounting = "none: only the bwrap mode runs each program in its own cgroup"

    def prepare(self) -> None:
        """As root (if we are): delegate the cgroups; then drop to the sandbox uid."""
        if self.mode == "bwrap" and not self.use_cgroups:
            self.accounting = "none: per-run cgroups are switched off (EVALUATION_CGROUPS)"
        elif self.mode == "bwrap":
            self.layout, why = cgroups.delegate(SANDBOX_UID, cpu=self.cpu_quota is not None)
            self.accounting = self.layout.kind if self.layout else "none: " + why
        if self.mode != "docker" and os.geteuid() == 0:
            supervise.drop_privileges(SANDBOX_UID)
        supervise.die_with_parent()  # after the uid change, which clears it
        os.chdir("/")
        if self.mode == "bwrap":
            self.seccomp = seccomp_bpf.build_filter()

    def group(self, spec: Spec) -> tuple[cgroups.RunGroup | None, str]:
        """The run's own cgroup, or (None, why) when the batch has none or it cannot be made."""
        if self.layout is None:
            return None, self.accounting
        try:
            tasks = SANDBOX_TASKS + spec.harness_processes + spec.processes
            memory = (spec.mem_mib + AS_GRACE_MIB) * MIB
            return cgroups.RunGroup(self.layout, memory, tasks, self.cpu_quota), ""
        except OSError as exc:
            return None, f"none: the run's cgroup could not be made ({exc.strerror})"


def _error(exc: OSError) -> dict[str, object]:
    """A host-side failure (disk full, no fds) is that spec's SANDBOX_ERROR."""
    return {
        "status": "SANDBOX_ERROR", "exit_code": None, "signal": None, "cpu_s": 0.0,
        "wall_s": 0.0, "peak_rss_kib": 0, "stdout": "", "stderr_tail": "",
        "detail": f"The runner could not prepare the run ({exc}).", "extra": {},
    }  # fmt: skip


class Pending:
    """One spec made ready to run: its files written, its cgroup made, its process spawned."""

    def __init__(self, batch: Batch, spec: Spec) -> None:
        self.batch, self.spec = batch, spec
        docker = batch.mode == "docker"
        self.rundir = "/sandbox" if docker else rundirs.make_rundir(batch.tmp_parent)
        self.names: list[str] = []
        self.group: cgroups.RunGroup | cgroups.ContainerGroup | None = None
        self.accounting = batch.accounting
        self.spawned: supervise.Spawned | None = None
        try:
            self.spawned = supervise.Spawned(self._launch())
        except BaseException:
            self.cleanup()
            raise

    def _launch(self) -> supervise.Launch:
        batch, spec, rundir = self.batch, self.spec, self.rundir
        if batch.mode == "bwrap":
            self.names = rundirs.write_files(spec.files, rundir)
            self.group, why = batch.group(spec)
            self.accounting = why or self.accounting
            seccomp_r, seccomp_w = os.pipe()
            os.write(seccomp_w, batch.seccomp)
            os.close(seccomp_w)
            status_r, status_w = os.pipe()
            fds = {SECCOMP_FD: seccomp_r, STATUS_FD: status_w}
            processes = spec.processes if self.group else 1
            argv = _bwrap_argv(spec, rundir, self.names, processes, grouped=self.group is not None)
            return supervise.Launch(argv, {}, spec.stdin, spec.rlimits(), extra_fds=fds,
                                    status_fd=status_r, group=self.group)  # fmt: skip
        if batch.mode == "unsafe":
            box, work = os.path.join(rundir, "sandbox"), os.path.join(rundir, "tmp")
            os.mkdir(box, 0o700)
            os.mkdir(work, 0o700)
            self.names = rundirs.write_files(spec.files, box)
            if spec.runtime is not None:  # where the harness looks without /runtime
                os.mkdir(os.path.join(rundir, "runtime"), 0o700)
                os.symlink(spec.runtime[1], os.path.join(rundir, "runtime", spec.runtime[0]))
            nproc = _count_processes(os.getuid()) + 1 + spec.harness_processes
            env = dict(spec.env(), HOME=work, TMPDIR=work)
            return supervise.Launch(_resolve_argv(spec.argv, box), env, spec.stdin,
                                    spec.rlimits(nproc), cwd=work, no_new_privs=True,
                                    kill_group=True)  # fmt: skip
        self.names = rundirs.write_files(spec.files, rundir)
        if cgroups.ContainerGroup.available():
            self.group, self.accounting = cgroups.ContainerGroup(), cgroups.ContainerGroup.kind
        # Processes are limited by the container's pids limit (RLIMIT_NPROC would count the uid
        # machine-wide without a user namespace).
        return supervise.Launch(_resolve_argv(spec.argv, "/sandbox"), spec.env(),
                                spec.stdin, spec.rlimits(), cwd=SANDBOX_TMP,
                                drop_to=SANDBOX_UID, kill_group=True,
                                group=self.group)  # fmt: skip

    def run(self) -> dict[str, object]:
        spawned, spec = self.spawned, self.spec
        if spawned is None:
            raise OSError("the run was already started")
        quota = getattr(self.group, "cpu_quota", None)  # what applied (cleanup forgets it)
        try:
            outcome = supervise.run(spawned, spec.cpu_s, spec.wall_s, spec.out_cap)
        finally:
            self.spawned = None
            self.cleanup()
        result = classify(outcome, spec, self.batch.mode, self.accounting)
        extra = result["extra"]
        if self.batch.cpu_quota and isinstance(extra, dict):  # asked for: say if it applied
            extra["cpu_quota"] = quota
        return result

    def cleanup(self) -> None:
        if self.spawned is not None:
            self.spawned.cancel()
            self.spawned = None
        if self.group is not None:
            self.group.remove()
            self.group = None
        mode = self.batch.mode
        if mode == "unsafe":
            import shutil

            shutil.rmtree(self.rundir, ignore_errors=True)  # fd-based: never follows symlinks
        elif mode == "docker":
            rundirs.remove_files(self.names, self.rundir)
            _docker_wipe()
        else:
            rundirs.remove_files(self.names, self.rundir)
            with contextlib.suppress(FileNotFoundError):
                os.rmdir(self.rundir)
        self.names = []


def _prepare(batch: Batch, spec: Spec) -> Pending | dict[str, object]:
    try:
        return Pending(batch, spec)
    except OSError as exc:
        return _error(exc)


def _finish(pending: Pending | dict[str, object]) -> dict[str, object]:
    if isinstance(pending, dict):
        return pending
    try:
        return pending.run()
    except OSError as exc:
        return _error(exc)


def run_specs(batch: Batch, specs: list[Spec]) -> list[dict[str, object]]:
    """Run every spec in turn. With bwrap the next run is spawned while the current one runs
    (its own directory and cgroup), so joining the cgroup costs the batch no wall time."""
    ahead = batch.mode == "bwrap"
    results: list[dict[str, object]] = []
    following = _prepare(batch, specs[0]) if specs and ahead else None
    try:
        for index, spec in enumerate(specs):
            current = following if following is not None else _prepare(batch, spec)
            following = None
            if ahead and index + 1 < len(specs):
                following = _prepare(batch, specs[index + 1])
            results.append(_finish(current))
    finally:
        if isinstance(following, Pending):
            following.cleanup()
    return results


def _docker_wipe() -> None:
    """Kill every process of the sandbox uid and empty /tmp, as that uid (docker mode)."""
    pid = os.fork()
    if pid == 0:
        try:
            supervise.drop_privileges(SANDBOX_UID)
            os.kill(-1, 9)
            import shutil

            for entry in os.listdir(SANDBOX_TMP):
                path = os.path.join(SANDBOX_TMP, entry)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _validate(batch: object) -> tuple[str, list[Spec], str, bool, float | None]:
    if not isinstance(batch, dict) or batch.get("protocol") != PROTOCOL:
        raise BatchError(f"the batch is not a protocol {PROTOCOL} JSON object")
    mode, specs = batch.get("mode"), batch.get("specs")
    if mode not in MODES or not isinstance(specs, list):
        raise BatchError(f"the batch needs mode in {MODES} and a list of specs")
    tmp_parent, use_cgroups = str(batch.get("tmp_parent", HOST_TMP)), batch.get("cgroups", True)
    quota = batch.get("cpu_quota")
    if quota is not None and (not isinstance(quota, (int, float)) or not 0.01 <= quota <= 64):
        raise BatchError("cpu_quota must be a share of one CPU from 0.01 to 64")
    cpu_quota = float(quota) if quota is not None else None
    return str(mode), [Spec(raw) for raw in specs], tmp_parent, bool(use_cgroups), cpu_quota


def main(argv: list[str]) -> int:
    envelope: dict[str, object] = {"protocol": PROTOCOL}
    try:
        if len(argv) == 2 and argv[0] == "--batch":
            with open(argv[1], "rb") as handle:
                raw = handle.read()
        else:
            raw = sys.stdin.buffer.read()
        try:
            batch = json.loads(raw)
        except ValueError:
            raise BatchError("the batch is not valid JSON") from None
        mode, specs, tmp_parent, use_cgroups, cpu_quota = _validate(batch)
        context = Batch(mode, tmp_parent, use_cgroups, cpu_quota)
        context.prepare()
        results = run_specs(context, specs)
    except (BatchError, OSError, ValueError, TypeError, KeyError) as exc:
        if not isinstance(exc, BatchError):
            import traceback

            traceback.print_exc()  # standard error: the backend logs it
        envelope["error"] = f"The runner could not run the batch: {exc}"
        sys.stdout.write(json.dumps(envelope) + "\n")
        return 2
    envelope.update(
        runner_version=RUNNER_VERSION,
        python=".".join(map(str, sys.version_info[:3])),
        mode=mode,
        uid=os.getuid(),
        accounting=context.accounting,
        results=results,
    )
    sys.stdout.write(json.dumps(envelope) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
