"""Per-run cgroups: what one sandboxed run and every process it started used (stdlib only).

Imported by ``runner.py``. Three layouts, found from ``/proc/self/mountinfo``:

- ``cgroup-v1``: separate ``cpuacct``, ``memory`` and ``pids`` hierarchies (these machines);
- ``cgroup-v2``: one unified hierarchy with the ``memory`` and ``pids`` controllers;
- none: no usable cgroup. The runner then allows the solution no child process or thread at all
  (``RLIMIT_NPROC``), so nothing it does can hide from ``wait4``; ``/healthz/`` and every report
  say which accounting was used.

Delegation: while still root, the runner makes (or finds) a ``haieval`` cgroup in each hierarchy
and hands it to the sandbox uid (v1: below the runner's own cgroup; v2: below the root, with the
controllers enabled for its children). A worker that does not run as root needs that done once
by an operator (``docs/deploy.md``). Each run then gets its own child cgroup, created by the
sandbox uid; the run's first process joins it before it execs bwrap, so bwrap, the program and
all their descendants are counted: CPU from ``cpuacct.usage`` / ``cpu.stat``, peak memory from
``memory.max_usage_in_bytes`` / ``memory.peak``, a ``pids`` limit, and everything still alive in
it is killed at the end.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

V1_CONTROLLERS = ("cpuacct", "memory", "pids")
QUOTA_PERIOD_US = 100_000  # the kernel's default CPU quota period
V2_CONTROLLERS = ("memory", "pids")
PARENT = "haieval"
KILL_WAIT_S = 2.0
STALE_S = 3600  # older than the longest batch: a run cgroup no runner will use again
V1, V2 = "cgroup-v1", "cgroup-v2"


def _mounts() -> tuple[dict[str, str], str | None]:
    """({v1 controller: mount point}, v2 mount point or None)."""
    v1: dict[str, str] = {}
    v2 = None
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            head, _, tail = line.partition(" - ")
            fields, extra = head.split(), tail.split()
            if len(fields) < 5 or len(extra) < 3 or fields[3] != "/":
                continue  # not the root of its hierarchy (a bind of a sub-cgroup)
            if extra[0] == "cgroup2":
                v2 = v2 or fields[4]
            elif extra[0] == "cgroup":
                for option in extra[2].split(","):
                    if option in (*V1_CONTROLLERS, "cpu"):
                        v1.setdefault(option, fields[4])
    return v1, v2


def _own_paths() -> dict[str, str]:
    """Controller (v1) or "" (v2) -> this process's cgroup path."""
    paths: dict[str, str] = {}
    with open("/proc/self/cgroup", encoding="utf-8") as handle:
        for line in handle:
            _id, controllers, path = line.rstrip("\n").split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                paths[name] = path
    return paths


def _write(path: str, value: str) -> None:
    with open(path, "w", encoding="ascii") as handle:
        handle.write(value)


def _read_int(path: str) -> int:
    with open(path, "rb") as handle:
        return int(handle.read().split()[0])


def _keyed(path: str, key: str) -> int | None:
    """The value of ``key`` in a flat-keyed cgroup file (``cpu.stat``, ``memory.events``,
    ``memory.oom_control``: one ``key value`` per line); None when absent or unreadable."""
    try:
        with open(path, encoding="ascii") as handle:
            for line in handle:
                name, _, value = line.partition(" ")
                if name == key:
                    return int(value)
    except (OSError, ValueError):
        pass
    return None


class Layout:
    """Where this runner's per-run cgroups go: ``parents`` maps hierarchy -> delegated dir."""

    def __init__(self, kind: str, parents: dict[str, str]) -> None:
        self.kind, self.parents = kind, parents

    def usable(self) -> bool:
        return all(os.access(p, os.W_OK | os.X_OK) for p in self.parents.values())


def delegate(uid: int, cpu: bool = False) -> tuple[Layout | None, str]:
    """Find (as root: make and hand over) the ``haieval`` cgroups; (layout, why not) otherwise.
    ``cpu``: also the cpu controller, for a per-run CPU quota (no quota if it is missing)."""
    try:
        v1, v2 = _mounts()
        own = _own_paths()
    except OSError as exc:
        return None, f"cannot read the cgroup mounts ({exc})"
    try:
        if all(name in v1 for name in V1_CONTROLLERS):
            names = (*V1_CONTROLLERS, "cpu") if cpu and "cpu" in v1 else V1_CONTROLLERS
            parents = {name: os.path.join(v1[name] + own.get(name, "/"), PARENT) for name in names}
            layout = Layout(V1, parents)
            if os.geteuid() == 0:
                for path in parents.values():
                    _hand_over(path, uid, ())
        elif v2 is not None and _has_v2_controllers(v2):
            layout = Layout(V2, {"": os.path.join(v2, PARENT)})
            if os.geteuid() == 0:
                path = layout.parents[""]
                _hand_over(path, uid, ("cgroup.procs", "cgroup.subtree_control"))
                wanted = "+memory +pids" + (
                    " +cpu" if cpu and _has_v2_controllers(v2, ("cpu",)) else ""
                )
                with contextlib.suppress(OSError):
                    _write(os.path.join(v2, "cgroup.subtree_control"), wanted)
                _write(os.path.join(path, "cgroup.subtree_control"), wanted)
                _join_v2_leaf(path)
        else:
            return None, "no cgroup hierarchy with the cpuacct, memory and pids controllers"
    except OSError as exc:
        return None, f"cannot delegate a cgroup to the sandbox ({exc})"
    if not layout.usable():
        return None, f"the {layout.kind} cgroup {sorted(layout.parents.values())[0]} is not ours"
    return layout, ""


def _has_v2_controllers(mount: str, names: tuple[str, ...] = V2_CONTROLLERS) -> bool:
    try:
        with open(os.path.join(mount, "cgroup.controllers"), encoding="ascii") as handle:
            available = handle.read().split()
    except OSError:
        return False
    return all(name in available for name in names)


def _hand_over(path: str, uid: int, files: tuple[str, ...]) -> None:
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o755)
    os.chown(path, uid, uid)
    for name in files:
        os.chown(os.path.join(path, name), uid, uid)
    _sweep(path)


def _sweep(parent: str) -> None:
    """Remove run cgroups a killed runner left behind: empty ones (rmdir refuses others) older
    than any run (a young one may belong to a runner that is about to use it)."""
    too_old = time.time() - STALE_S
    with contextlib.suppress(OSError):
        for entry in os.scandir(parent):
            if entry.name.startswith("run-") and entry.stat().st_mtime < too_old:
                with contextlib.suppress(OSError):
                    os.rmdir(entry.path)


def _join_v2_leaf(parent: str) -> None:
    """v2 moves need write access to the common ancestor: the runner itself lives inside.

    Leaves of runners that have ended are empty and removed here (rmdir refuses busy ones).
    """
    for entry in os.listdir(parent):
        if entry.startswith("runner-"):
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(parent, entry))
    leaf = os.path.join(parent, f"runner-{os.getpid()}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(leaf, 0o755)
    _write(os.path.join(leaf, "cgroup.procs"), "0")


class RunGroup:
    """One run's cgroup (one directory per hierarchy)."""

    def __init__(
        self, layout: Layout, mem_bytes: int, max_tasks: int, cpu_quota: float | None = None
    ) -> None:
        self.kind = layout.kind
        name = "run-" + os.urandom(6).hex()
        self.dirs = {key: os.path.join(parent, name) for key, parent in layout.parents.items()}
        self.cpu_quota: float | None = None  # the quota applied (None: none, or no controller)
        made: list[str] = []
        try:
            for path in dict.fromkeys(self.dirs.values()):  # cpu and cpuacct may share a mount
                os.mkdir(path, 0o700)
                made.append(path)
            quota = str(round(cpu_quota * QUOTA_PERIOD_US)) if cpu_quota else ""
            if self.kind == V1:
                _write(self._file("memory", "memory.limit_in_bytes"), str(mem_bytes))
                _write(self._file("pids", "pids.max"), str(max_tasks))
                if quota and "cpu" in self.dirs:
                    _write(self._file("cpu", "cpu.cfs_period_us"), str(QUOTA_PERIOD_US))
                    _write(self._file("cpu", "cpu.cfs_quota_us"), quota)
                    self.cpu_quota = cpu_quota
            else:
                _write(self._file("", "memory.max"), str(mem_bytes))
                if os.path.exists(self._file("", "memory.swap.max")):
                    _write(self._file("", "memory.swap.max"), "0")
                _write(self._file("", "pids.max"), str(max_tasks))
                if quota and os.path.exists(self._file("", "cpu.max")):
                    _write(self._file("", "cpu.max"), f"{quota} {QUOTA_PERIOD_US}")
                    self.cpu_quota = cpu_quota
        except OSError:
            for path in reversed(made):
                with contextlib.suppress(OSError):
                    os.rmdir(path)
            raise

    def _file(self, key: str, name: str) -> str:
        return os.path.join(self.dirs[key], name)

    def procs_files(self) -> list[str]:
        """Where the run's first process writes its pid before exec (every hierarchy)."""
        return [os.path.join(path, "cgroup.procs") for path in dict.fromkeys(self.dirs.values())]

    def cpu_s(self) -> float:
        if self.kind == V1:
            try:
                return _read_int(self._file("cpuacct", "cpuacct.usage")) / 1e9
            except (OSError, ValueError):
                return 0.0
        return (_keyed(self._file("", "cpu.stat"), "usage_usec") or 0) / 1e6

    def peak_kib(self) -> int:
        name = ("memory", "memory.max_usage_in_bytes") if self.kind == V1 else ("", "memory.peak")
        try:
            return _read_int(self._file(*name)) // 1024
        except (OSError, ValueError):
            return 0

    def oom_killed(self) -> bool:
        """The kernel killed something in the run for reaching the memory limit."""
        name = ("memory", "memory.oom_control") if self.kind == V1 else ("", "memory.events")
        return (_keyed(self._file(*name), "oom_kill") or 0) > 0

    def _members(self) -> list[int]:
        key = "pids" if self.kind == V1 else ""
        try:
            with open(self._file(key, "cgroup.procs"), encoding="ascii") as handle:
                return [int(line) for line in handle if line.strip()]
        except (OSError, ValueError):
            return []

    def kill_all(self) -> int:
        """SIGKILL whatever is still in the run; how many processes were left."""
        left = self._members()
        if not left:
            return 0
        if self.kind == V2:
            with contextlib.suppress(OSError):
                _write(self._file("", "cgroup.kill"), "1")
        deadline = time.monotonic() + KILL_WAIT_S
        members = left
        while members and time.monotonic() < deadline:
            for pid in members:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.002)
            members = self._members()
        return len(left)

    def remove(self) -> None:
        for path in dict.fromkeys(self.dirs.values()):
            for _ in range(50):  # a killed task leaves the cgroup a moment after SIGKILL
                try:
                    os.rmdir(path)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.002)


class ContainerGroup:
    """Docker mode: one container per batch, so a run is measured as the delta of the
    container's own cgroup (v2, read-only inside): CPU from ``cpu.stat``, peak memory from
    ``memory.peak`` reset for this run where the kernel allows it (6.12+), else the container's
    high-water mark so far (never less than the run used). The runner empties the container
    between runs."""

    kind = "container-cgroup"
    ROOT = "/sys/fs/cgroup"

    def __init__(self) -> None:
        self._cpu0 = self._usage()
        self._oom0 = self._oom_kills()
        self._peak_fd: int | None = None
        with contextlib.suppress(OSError):
            fd = os.open(os.path.join(self.ROOT, "memory.peak"), os.O_RDWR)
            try:
                os.write(fd, b"reset\n")
            except OSError:
                os.close(fd)
                fd = os.open(os.path.join(self.ROOT, "memory.peak"), os.O_RDONLY)
            self._peak_fd = fd

    @classmethod
    def available(cls) -> bool:
        return os.path.exists(os.path.join(cls.ROOT, "cpu.stat")) and os.path.exists(
            os.path.join(cls.ROOT, "memory.peak")
        )

    def _usage(self) -> float:
        return (_keyed(os.path.join(self.ROOT, "cpu.stat"), "usage_usec") or 0) / 1e6

    def _oom_kills(self) -> int:
        return _keyed(os.path.join(self.ROOT, "memory.events"), "oom_kill") or 0

    def procs_files(self) -> list[str]:
        return []  # the whole container is the group

    def cpu_s(self) -> float:
        return max(0.0, self._usage() - self._cpu0)

    def peak_kib(self) -> int:
        if self._peak_fd is None:
            return 0
        try:
            return int(os.pread(self._peak_fd, 64, 0).split()[0]) // 1024
        except (OSError, ValueError, IndexError):
            return 0

    def oom_killed(self) -> bool:
        return self._oom_kills() > self._oom0

    def kill_all(self) -> int:
        return 0  # the runner's wipe kills every sandbox-uid process after each run

    def remove(self) -> None:
        if self._peak_fd is not None:
            os.close(self._peak_fd)
            self._peak_fd = None
