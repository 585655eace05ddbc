"""Start one sandboxed process, watch it from outside, and classify how it ended (stdlib only).

Imported by ``runner.py`` (same directory, ``python3 -I -S``). Measurements follow
notes/sandbox.md §3-4: CPU is polled from ``/proc/<child-pid>/stat`` every ``POLL_S``; on CPU,
wall or output overrun the *child* (never bwrap) is SIGKILLed through a pidfd, and the verdict's
CPU time and peak RSS come from ``wait4`` on the process this runner forked.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import resource
import select
import signal
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from evaluation.runner.cgroups import ContainerGroup, RunGroup

POLL_S = 0.025
STDERR_TAIL = 8192
DRAIN_S = 1.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
CHILD_PID_RE = re.compile(rb'"child-pid"\s*:\s*(\d+)')
EXIT_CODE_RE = re.compile(rb'"exit-code"\s*:\s*(-?\d+)')


class Launch:
    """What to exec and how; ``extra_fds`` maps target fd -> source fd in this process.

    Plain classes, not dataclasses: importing ``dataclasses`` costs the runner 1.5 MB of RSS,
    which every child's ``ru_maxrss`` would inherit.
    """

    def __init__(
        self,
        argv: list[str],
        env: dict[str, str],
        stdin: bytes,
        rlimits: list[tuple[int, int]],
        *,
        cwd: str = "/",
        extra_fds: dict[int, int] | None = None,
        status_fd: int | None = None,
        drop_to: int | None = None,
        no_new_privs: bool = False,
        kill_group: bool = False,
        group: RunGroup | ContainerGroup | None = None,
    ) -> None:
        self.exe = argv[0]
        self.argv, self.env, self.stdin, self.rlimits, self.cwd = argv, env, stdin, rlimits, cwd
        self.extra_fds = extra_fds or {}
        self.status_fd = status_fd  # our read end of bwrap's --json-status-fd pipe
        self.drop_to = drop_to  # uid/gid for the child (docker mode)
        self.no_new_privs = no_new_privs
        self.kill_group = kill_group  # SIGKILL the child's process group (no pid namespace)
        self.group = group  # the run's cgroup: joined before exec, measured, emptied at the end


class Outcome:
    def __init__(self, watch: _Watch, status: int, usage: resource.struct_rusage, wall: float,
                 started: bool) -> None:  # fmt: skip
        self.exit_code, self.signal = _decode_status(status, watch.status)
        self.cpu_s = usage.ru_utime + usage.ru_stime
        self.wall_s = wall
        self.peak_rss_kib = usage.ru_maxrss
        self.oom_killed = False  # the cgroup's memory limit killed a process of the run
        self.left_running = 0  # processes still alive in the run's cgroup when it ended
        self.grouped = False  # measured by a cgroup (a SIGKILL is then the OOM killer's only if
        # the cgroup says so)
        self.stdout = bytes(watch.stdout)
        self.stderr_tail = bytes(watch.stderr)
        self.out_bytes, self.err_bytes = watch.out_bytes, watch.err_bytes
        self.killed = watch.killed  # "", "cpu", "wall", "output"
        self.started = started  # the program itself started (bwrap reported child-pid)


def _prctl(option: int, value: int) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def set_no_new_privs() -> None:
    _prctl(38, 1)  # PR_SET_NO_NEW_PRIVS


def die_with_parent() -> None:
    """SIGKILL this process when its parent (the worker) dies; bwrap's --die-with-parent
    then takes the sandbox down too."""
    _prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def drop_privileges(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    set_no_new_privs()


def _child(launch: Launch, stdin_r: int, out_w: int, err_w: int, go_r: int) -> None:
    """In the forked child: join the run's cgroup, wire fds, wait for the go, set limits, exec.
    Never returns."""
    try:
        os.setpgid(0, 0)
        sources = [stdin_r, out_w, err_w, *launch.extra_fds.values(), go_r]
        targets = [0, 1, 2, *launch.extra_fds.keys()]
        targets.append(max(targets) + 1)  # the go pipe, closed before exec
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 100) for fd in sources]
        for source, target in zip(high, targets, strict=True):
            os.dup2(source, target)
        # First of all: the current run's pipes (its stdin's write end!) must not stay open here.
        os.closerange(targets[-1] + 1, 1 << 20)
        if launch.group is not None:  # before exec: bwrap and all it starts are counted
            for path in launch.group.procs_files():
                with open(path, "w", encoding="ascii") as handle:
                    handle.write("0")
        if os.read(targets[-1], 1) != b"!":  # the run was cancelled
            os._exit(0)
        os.close(targets[-1])
        for which, value in launch.rlimits:
            resource.setrlimit(which, (value, value))
        os.chdir(launch.cwd)
        if launch.drop_to is not None:
            drop_privileges(launch.drop_to)
        elif launch.no_new_privs:
            set_no_new_privs()
        os.execve(launch.exe, launch.argv, launch.env)  # noqa: S606 - fixed, trusted argv
    except BaseException as exc:
        try:
            os.write(2, f"runner: cannot start {launch.exe}: {exc}\n".encode())
        finally:
            os._exit(127)


class _Watch:
    def __init__(
        self, cpu_s: float, wall_s: float, out_cap: int, group: RunGroup | ContainerGroup | None
    ) -> None:
        self.cpu_s, self.out_cap, self.group = cpu_s, out_cap, group
        self.start = time.monotonic()
        self.deadline = self.start + wall_s
        self.stdout = bytearray()
        self.stderr = bytearray()
        self.out_bytes = self.err_bytes = 0
        self.status = b""
        self.child_pid: int | None = None
        self.child_pidfd: int | None = None
        self.stat_fd: int | None = None
        self.killed = ""

    def take(self, which: str, data: bytes) -> None:
        if which == "out":
            self.out_bytes += len(data)
            room = self.out_cap - len(self.stdout)
            if room > 0:
                self.stdout += data[:room]
        elif which == "err":
            self.err_bytes += len(data)
            self.stderr += data
            del self.stderr[:-STDERR_TAIL]
        else:
            self.status += data
            match = CHILD_PID_RE.search(self.status)
            if match and self.child_pid is None:
                self.attach(int(match.group(1)))

    def attach(self, pid: int) -> None:
        """Watch ``pid``: the program itself (bwrap's child-pid, or our direct child)."""
        self.child_pid = pid
        try:
            self.child_pidfd = os.pidfd_open(pid)
            self.stat_fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
        except OSError:  # already gone: nothing to watch or kill
            pass

    def child_cpu(self) -> float:
        if self.group is not None:
            return self.group.cpu_s()
        if self.stat_fd is None:
            return 0.0
        try:
            raw = os.pread(self.stat_fd, 4096, 0)
        except OSError:
            return 0.0
        fields = raw[raw.rfind(b")") + 2 :].split()
        if len(fields) < 15:
            return 0.0
        return sum(int(x) for x in fields[11:15]) / CLK_TCK  # utime stime cutime cstime

    def kill(self, reason: str, bwrap_pid: int) -> None:
        if self.killed:
            return
        self.killed = reason
        if self.child_pidfd is not None:
            try:
                signal.pidfd_send_signal(self.child_pidfd, signal.SIGKILL)
                return
            except OSError:
                pass
        # no child-pid (setup hung) or no longer killable: stop the launcher itself
        with contextlib.suppress(OSError):
            os.kill(bwrap_pid, signal.SIGKILL)

    def close(self) -> None:
        for fd in (self.child_pidfd, self.stat_fd):
            if fd is not None:
                os.close(fd)


class Spawned:
    """A run's process, forked ahead of its turn: already in its cgroup, waiting to exec.

    Joining a cgroup can wait for an RCU grace period (milliseconds); forking the next run's
    process while the current one runs keeps that wait out of the batch's wall time.
    """

    def __init__(self, launch: Launch) -> None:
        self.launch = launch
        stdin_r, self.stdin_w = os.pipe()
        self.out_r, out_w = os.pipe()
        self.err_r, err_w = os.pipe()
        go_r, self.go_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            os.close(self.go_w)
            _child(launch, stdin_r, out_w, err_w, go_r)
        for fd in (stdin_r, out_w, err_w, go_r, *launch.extra_fds.values()):
            os.close(fd)

    def go(self) -> None:
        # A child that could not even join its cgroup has exited (its reason on stderr): the
        # write then fails, and the run ends as the sandbox error it is.
        with contextlib.suppress(OSError):
            os.write(self.go_w, b"!")
        os.close(self.go_w)

    def cancel(self) -> None:
        """The run will not happen: let the waiting child exit and close our ends."""
        with contextlib.suppress(OSError):
            os.close(self.go_w)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        for fd in (self.stdin_w, self.out_r, self.err_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        if self.launch.status_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.launch.status_fd)


def run(spawned: Spawned, cpu_s: float, wall_s: float, out_cap: int) -> Outcome:
    """Start a spawned run and supervise it until it (and its output) is finished."""
    launch, pid = spawned.launch, spawned.pid
    stdin_w, out_r, err_r = spawned.stdin_w, spawned.out_r, spawned.err_r
    watch = _Watch(cpu_s, wall_s, out_cap, launch.group)
    spawned.go()
    pidfd = os.pidfd_open(pid)
    if launch.status_fd is None:
        watch.attach(pid)
    readers = {out_r: "out", err_r: "err"}
    if launch.status_fd is not None:
        readers[launch.status_fd] = "status"
    pending = memoryview(launch.stdin)
    poller = select.poll()
    for fd in (*readers, stdin_w):
        os.set_blocking(fd, False)
    for fd in readers:
        poller.register(fd, select.POLLIN)
    poller.register(pidfd, select.POLLIN)
    writer: int | None = stdin_w
    if pending:
        poller.register(stdin_w, select.POLLOUT)
    else:
        os.close(stdin_w)
        writer = None
    kill_sent_at = 0.0
    exited = False
    while not exited:
        timeout = POLL_S if watch.killed else min(POLL_S, watch.deadline - time.monotonic())
        for fd, _event in poller.poll(max(0.0, timeout) * 1000):
            if fd == pidfd:
                exited = True
            elif fd == writer:
                try:
                    pending = pending[os.write(fd, pending[:65536]) :]
                except (BlockingIOError, InterruptedError):
                    continue
                except OSError:  # the program closed its stdin
                    pending = pending[:0]
                if not pending:
                    poller.unregister(fd)
                    os.close(fd)
                    writer = None
            elif fd in readers:
                _read_into(watch, readers, poller, fd)
        if exited:
            break
        if watch.killed:
            if time.monotonic() - kill_sent_at > 2.0:  # child dead but the launcher hangs
                os.kill(pid, signal.SIGKILL)
            continue
        if watch.child_cpu() > cpu_s:
            watch.kill("cpu", pid)
        elif time.monotonic() >= watch.deadline:
            watch.kill("wall", pid)
        elif max(watch.out_bytes, watch.err_bytes) > out_cap:
            watch.kill("output", pid)
        if watch.killed:
            kill_sent_at = time.monotonic()
    if launch.kill_group:  # the zombie still holds its process group id
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
    _, status, usage = os.wait4(pid, 0)
    wall = time.monotonic() - watch.start
    left = launch.group.kill_all() if launch.group is not None else 0  # before the drain
    if writer is not None:
        poller.unregister(writer)
        os.close(writer)
    poller.unregister(pidfd)
    os.close(pidfd)
    drain_until = time.monotonic() + DRAIN_S
    while readers and time.monotonic() < drain_until:
        for fd, _event in poller.poll(50):
            if fd in readers:
                _read_into(watch, readers, poller, fd)
    for fd in list(readers):
        os.close(fd)
    if max(watch.out_bytes, watch.err_bytes) > out_cap and not watch.killed:
        watch.killed = "output"
    watch.close()
    outcome = Outcome(
        watch, status, usage, wall, watch.child_pid is not None or launch.status_fd is None
    )
    if launch.group is not None:
        outcome.left_running = left
        outcome.grouped = True
        outcome.cpu_s = launch.group.cpu_s()
        outcome.peak_rss_kib = launch.group.peak_kib()
        outcome.oom_killed = launch.group.oom_killed()
    return outcome


def _read_into(watch: _Watch, readers: dict[int, str], poller: select.poll, fd: int) -> None:
    try:
        data = os.read(fd, 65536)
    except (BlockingIOError, InterruptedError):
        return
    if data:
        watch.take(readers[fd], data)
    else:
        poller.unregister(fd)
        os.close(fd)
        del readers[fd]


def _decode_status(status: int, status_json: bytes) -> tuple[int | None, int | None]:
    """(exit code, signal). bwrap reports a child killed by signal N as exit code 128 + N."""
    if os.WIFSIGNALED(status):
        return None, os.WTERMSIG(status)
    code = os.WEXITSTATUS(status)
    match = EXIT_CODE_RE.search(status_json)
    if match:
        code = int(match.group(1))
    if status_json and 128 < code <= 128 + 64:
        return None, code - 128
    return code, None
