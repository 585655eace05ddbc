"""Hostile solutions against the real bwrap sandbox: each is a solution.py run through the harness.

Every test also checks (``watch_for_strays`` from test_sandbox_bwrap) that no process of the
sandbox uid and no run directory is left behind.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evaluation.sandbox import RunStatus, call_spec, parse_reply
from evaluation.sandbox.bwrap import LocalBwrapBackend
from tests.evaluation.test_sandbox_bwrap import HOST_TMP, make_sandbox, watch_for_strays

REPO = str(Path(__file__).resolve().parents[2])
OK_SOURCE = "def f():\n    return 'fine'\n"


@pytest.fixture(scope="module")
def sandbox() -> LocalBwrapBackend:
    return make_sandbox()


@pytest.fixture(autouse=True)
def no_stray_processes() -> Iterator[None]:
    yield from watch_for_strays()


def solution(body: str) -> str:
    """A solution whose entry point ``f()`` runs ``body``."""
    return "def f():\n" + textwrap.indent(textwrap.dedent(body), "    ")


def run(sandbox: LocalBwrapBackend, body: str, **limits: Any) -> tuple[Any, dict[str, Any]]:
    (result,) = sandbox.run_batch([call_spec(solution(body), "f", [], **limits)])
    return result, parse_reply(result)


def test_no_network(sandbox: LocalBwrapBackend) -> None:
    result, reply = run(
        sandbox,
        """
        import socket
        out = {}
        for name, family in [("inet", socket.AF_INET), ("inet6", socket.AF_INET6),
                             ("netlink", socket.AF_NETLINK)]:
            try:
                socket.socket(family)
                out[name] = "created"
            except OSError as exc:
                out[name] = exc.errno
        try:
            socket.create_connection(("127.0.0.1", 22), timeout=1)
            out["connect"] = "connected"
        except OSError as exc:
            out["connect"] = exc.errno
        a, b = socket.socketpair()  # AF_UNIX stays available (multiprocessing)
        a.sendall(b"ping")
        out["unix"] = b.recv(4).decode()
        return out
        """,
    )
    assert result.status == RunStatus.OK, result
    out = reply["result"]
    assert out["unix"] == "ping"
    for name in ("inet", "inet6", "netlink", "connect"):
        assert isinstance(out[name], int), out  # an errno: every attempt failed


def test_host_files_are_invisible(sandbox: LocalBwrapBackend) -> None:
    result, reply = run(
        sandbox,
        f"""
        import os
        seen = {{}}
        for path in ["/etc/passwd", "/etc/shadow", {REPO!r} + "/pyproject.toml",
                     {REPO!r}, "/root", "/home", "/work", "/var/run"]:
            try:
                with open(path, "rb") as handle:
                    seen[path] = "read " + str(len(handle.read()))
            except OSError as exc:
                seen[path] = type(exc).__name__
        seen["/"] = sorted(os.listdir("/"))
        seen["proc"] = os.path.exists("/proc")
        seen["usr"] = sorted(os.listdir("/usr"))
        seen["usr/bin"] = sorted(os.listdir("/usr/bin"))
        seen["usr/lib"] = sorted(os.listdir("/usr/lib"))
        seen["usr/share"] = sorted(os.listdir("/usr/share"))
        return seen
        """,
    )
    assert result.status == RunStatus.OK, result
    seen = reply["result"]
    for path in ("/etc/passwd", "/etc/shadow", REPO + "/pyproject.toml", "/root", "/home"):
        assert seen[path] == "FileNotFoundError", (path, seen[path])
    assert seen["/"] == ["bin", "dev", "lib", "lib64", "sandbox", "sbin", "tmp", "usr"]
    assert seen["proc"] is False  # no /proc: no other process of the run can be inspected
    # Only the interpreter and what it loads: no /usr/local, no other programs or packages.
    assert "local" not in seen["usr"]
    assert seen["usr/bin"] == ["python3", "python3.11"]  # prlimit too where no cgroup is had
    assert set(seen["usr/lib"]) <= {"python3.11", "x86_64-linux-gnu", "aarch64-linux-gnu"}
    assert seen["usr/share"] in ([], ["zoneinfo"])


def test_environment_is_cleared(
    sandbox: LocalBwrapBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HAIEVAL_TEST_SECRET", "s3cr3t-value")
    monkeypatch.setenv("DATABASE_URL", "postgres://user:s3cr3t-value@db/x")
    result, reply = run(
        sandbox,
        """
        import os
        return {"env": dict(os.environ)}
        """,
    )
    assert result.status == RunStatus.OK, result
    assert "s3cr3t-value" not in result.stdout.decode()
    env = reply["result"]["env"]
    threads = {name for name in env if name.endswith(("_NUM_THREADS", "_MAXIMUM_THREADS"))}
    assert set(env) - threads <= {
        "PATH", "HOME", "LANG", "PYTHONDONTWRITEBYTECODE", "MALLOC_ARENA_MAX", "PWD"
    }  # fmt: skip
    assert "OPENBLAS_NUM_THREADS" in threads
    assert {env[name] for name in threads} == {"1"}  # BLAS/OpenMP pools: one thread


def test_fork_bomb_is_contained(sandbox: LocalBwrapBackend) -> None:
    bomb = call_spec(
        solution(
            """
            import os
            while True:
                try:
                    os.fork()
                except OSError:
                    pass
            """
        ),
        "f",
        [],
        cpu_s=1.0,
        wall_s=2.0,
        processes=16,
    )
    bomb_result, after = sandbox.run_batch([bomb, call_spec(OK_SOURCE, "f", [])])
    assert bomb_result.status in (RunStatus.TLE_CPU, RunStatus.TLE_WALL), bomb_result
    assert bomb_result.wall_s < 6.0
    assert after.status == RunStatus.OK
    assert parse_reply(after)["result"] == "fine"


def test_nproc_limit_applies_inside(sandbox: LocalBwrapBackend) -> None:
    result, reply = run(
        sandbox,
        """
        import os, time
        children = 0
        try:
            for _ in range(100):
                pid = os.fork()
                if pid == 0:
                    time.sleep(5)
                    os._exit(0)
                children += 1
        except OSError:
            pass
        return children
        """,
        processes=8,
    )
    assert result.status == RunStatus.OK, result
    assert 1 <= reply["result"] < 8


def test_memory_bomb_is_mle(sandbox: LocalBwrapBackend) -> None:
    result, reply = run(
        sandbox,
        """
        hog = []
        while True:
            hog.append(bytearray(b"x" * (8 << 20)))
        """,
        mem_mib=128,
    )
    assert result.status == RunStatus.MLE, result
    assert reply["ok"] is False


def test_disk_bomb_is_fsize(sandbox: LocalBwrapBackend) -> None:
    before = set(os.listdir(HOST_TMP))
    big, many = sandbox.run_batch(
        [
            call_spec(
                solution(
                    """
                    with open("/tmp/big", "wb") as handle:
                        while True:
                            handle.write(b"x" * (1 << 20))
                    """
                ),
                "f",
                [],
                fsize_mib=4,
            ),
            call_spec(
                solution(
                    """
                    i = 0
                    while True:
                        with open(f"/tmp/part{i}", "wb") as handle:
                            handle.write(b"x" * (2 << 20))
                        i += 1
                    """
                ),
                "f",
                [],
                fsize_mib=4,
                tmpfs_mib=8,
            ),
        ]
    )
    assert big.status == RunStatus.FSIZE, big
    assert many.status == RunStatus.FSIZE, many
    assert "No space left on device" in many.stderr_tail
    created = set(os.listdir(HOST_TMP)) - before
    assert not {p for p in created if p.startswith("part") or p == "big"}, created


def test_output_bomb_is_ole(sandbox: LocalBwrapBackend) -> None:
    result, _ = run(sandbox, "while True:\n    print('x' * 10000)\n", out_cap=100_000)
    assert result.status == RunStatus.OLE, result
    assert result.wall_s < 5.0
    assert len(result.stderr_tail) <= 8192


def test_busy_loop_is_tle_cpu(sandbox: LocalBwrapBackend) -> None:
    body = "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass\n"
    result, _ = run(sandbox, body, cpu_s=0.5, wall_s=10)
    assert result.status == RunStatus.TLE_CPU
    assert result.signal == 9  # SIGKILLed from outside; SIGXCPU would not have worked
    assert result.cpu_s < 1.2


def test_ignored_signals_and_sleep_are_tle_wall(sandbox: LocalBwrapBackend) -> None:
    result, _ = run(
        sandbox,
        """
        import signal, time
        for sig in (signal.SIGTERM, signal.SIGXCPU, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)
        time.sleep(3600)
        """,
        cpu_s=1.0,
        wall_s=1.5,
    )
    assert result.status == RunStatus.TLE_WALL, result
    assert 1.5 <= result.wall_s < 4.0


def test_killing_parent_or_group_harms_nothing(sandbox: LocalBwrapBackend) -> None:
    killers = [
        "import os\nos.kill(os.getppid(), 9)\nreturn 'survived'\n",
        "import os\nos.killpg(0, 9)\nreturn 'survived'\n",
        "import os\ntry:\n    os.kill(-1, 9)\nexcept OSError:\n    pass\nreturn 'survived'\n",
    ]
    specs = []
    for body in killers:
        specs += [call_spec(solution(body), "f", []), call_spec(OK_SOURCE, "f", [])]
    results = sandbox.run_batch(specs)
    assert len(results) == len(specs)
    for killer, neighbour in zip(results[::2], results[1::2], strict=True):
        assert killer.status in (RunStatus.OK, RunStatus.RE), killer
        assert neighbour.status == RunStatus.OK
        assert parse_reply(neighbour)["result"] == "fine"


def test_symlinks_and_sandbox_dir_are_harmless(sandbox: LocalBwrapBackend) -> None:
    result, reply = run(
        sandbox,
        f"""
        import os
        out = {{}}
        os.symlink("/etc/passwd", "/tmp/passwd")
        os.symlink({REPO!r}, "/tmp/repo")
        os.symlink("/", "/tmp/root")
        for path in ["/tmp/passwd", "/tmp/repo/pyproject.toml"]:
            try:
                open(path).read()
                out[path] = "read"
            except OSError as exc:
                out[path] = type(exc).__name__
        for path in ["/sandbox/solution.py", "/sandbox/new.py", "/x", "/usr/x", "/dev/x",
                     "/tmp/root/sandbox/y"]:
            try:
                with open(path, "w") as handle:
                    handle.write("pwned")
                out[path] = "written"
            except OSError as exc:
                out[path] = type(exc).__name__
        try:
            with open("/dev/shm/fill", "wb") as handle:
                handle.write(b"x" * (4 << 20))
            out["shm"] = "filled"
        except OSError as exc:
            out["shm"] = exc.strerror
        return out
        """,
    )
    assert result.status == RunStatus.OK, result
    out = reply["result"]
    assert out.pop("shm") == "No space left on device"  # /dev/shm is capped at 1 MiB
    assert "read" not in out.values(), out
    assert "written" not in out.values(), out
    assert not any(Path(HOST_TMP, name).is_symlink() for name in ("passwd", "repo", "root"))


def test_privilege_escalation_attempts_fail(sandbox: LocalBwrapBackend) -> None:
    result, reply = run(
        sandbox,
        """
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        out = {"uid": [os.getuid(), os.geteuid(), os.getgid()]}
        for name, call in [("setuid", lambda: os.setuid(0)), ("setgid", lambda: os.setgid(0)),
                           ("chroot", lambda: os.chroot("/tmp"))]:
            try:
                call()
                out[name] = "ok"
            except OSError as exc:
                out[name] = exc.errno
        out["unshare"] = libc.unshare(0x10000000 | 0x20000)  # CLONE_NEWUSER | CLONE_NEWNS
        out["mount"] = libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)
        out["ptrace"] = libc.ptrace(16, 1, 0, 0)  # PTRACE_ATTACH to init
        out["cap_sys_admin"] = libc.prctl(23, 21, 0, 0, 0)  # PR_CAPBSET_READ
        out["nnp"] = libc.prctl(39, 0, 0, 0, 0)  # PR_GET_NO_NEW_PRIVS
        return out
        """,
    )
    assert result.status == RunStatus.OK, result
    out = reply["result"]
    assert out["uid"] == [65534, 65534, 65534]
    assert all(out[name] != "ok" for name in ("setuid", "setgid", "chroot"))
    assert out["unshare"] == out["mount"] == out["ptrace"] == -1
    assert out["cap_sys_admin"] == 0  # dropped from the bounding set
    assert out["nnp"] == 1


def test_batch_results_are_independent(sandbox: LocalBwrapBackend) -> None:
    crash = solution("import ctypes\nctypes.string_at(0)\n")  # SIGSEGV
    specs = [
        call_spec(crash, "f", []),
        call_spec(OK_SOURCE, "f", []),
        call_spec(solution("import os\nos._exit(3)\n"), "f", []),
        call_spec(OK_SOURCE, "f", []),
        call_spec(solution("import os\nos._exit(0)\n"), "f", []),
    ]
    crashed, ok1, exited, ok2, silent = sandbox.run_batch(specs)
    assert crashed.status == RunStatus.RE, crashed
    assert crashed.signal == 11
    assert exited.status == RunStatus.RE
    assert exited.exit_code == 3
    assert parse_reply(exited)["error"] == "RE"
    assert silent.status == RunStatus.OK
    assert parse_reply(silent)["error"] == "NoResult"
    for ok in (ok1, ok2):
        assert ok.status == RunStatus.OK
        assert parse_reply(ok)["result"] == "fine"
