"""The bubblewrap backend, for real (no mocks): protocol, harness replies, measurements.

Skips when /usr/bin/bwrap is missing or cannot create namespaces; with REQUIRE_SERVICES=1 that
is a failure instead. ``make_sandbox`` and ``watch_for_strays`` are shared with the hostile and
unsafe tests.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import os
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from evaluation.sandbox import (
    RunSpec,
    RunStatus,
    SandboxUnavailable,
    call_spec,
    get_sandbox,
    parse_reply,
    unittest_spec,
)
from evaluation.sandbox.bwrap import BWRAP, LocalBwrapBackend

SANDBOX_UID = 65534
HOST_TMP = "/tmp"  # noqa: S108 - the host's /tmp, which sandboxed code must not touch
MIB = 1024 * 1024
PR_SET_CHILD_SUBREAPER = 36


def _required() -> bool:
    return os.environ.get("REQUIRE_SERVICES", "") in {"1", "true", "yes"}


def _unavailable(reason: str) -> None:
    if _required():
        pytest.fail(f"REQUIRE_SERVICES=1 but the bwrap sandbox cannot run: {reason}")
    pytest.skip(reason)


@functools.cache
def run_parent() -> str:
    """A private parent for this session's run directories, so leftovers are attributable."""
    path = tempfile.mkdtemp(prefix="haieval-test-runs-")
    if os.geteuid() == 0:
        os.chown(path, SANDBOX_UID, SANDBOX_UID)  # the runner drops to 65534 before mkdir
    atexit.register(shutil.rmtree, path, True)
    return path


def make_sandbox() -> LocalBwrapBackend:
    """The real bwrap backend after its self-test passed, else a skip (a failure if required)."""
    if not os.access(BWRAP, os.X_OK):
        _unavailable(f"{BWRAP} is missing (apt-get install bubblewrap)")
    try:
        assert isinstance(get_sandbox("bwrap"), LocalBwrapBackend)
    except SandboxUnavailable as exc:
        _unavailable(str(exc))
    backend = LocalBwrapBackend(tmp_parent=run_parent())
    works, detail = backend.self_test()
    if not works:
        _unavailable(f"the bwrap self-test failed: {detail}")
    return backend


@pytest.fixture(scope="module")
def sandbox() -> LocalBwrapBackend:
    return make_sandbox()


def _set_child_subreaper(on: bool) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def _processes() -> dict[int, tuple[int, str, int, str]]:
    """pid -> (parent pid, state, uid, command line) for every process in /proc."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            uid = os.stat(f"/proc/{entry}").st_uid
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        table[int(entry)] = (int(fields[1]), fields[0], uid, cmdline)
    return table


def _ours(table: dict[int, tuple[int, str, int, str]]) -> set[int]:
    """Descendants of this test process, plus anything naming our run directories."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, *_rest) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found | {pid for pid, row in table.items() if run_parent() in row[3]}


def watch_for_strays() -> Iterator[None]:
    """Around a test: afterwards nothing the sandbox started may still run or exist.

    The test process becomes a child subreaper meanwhile, so anything orphaned by a run (even
    after its runner and bwrap died) is reparented to it and still found as a descendant;
    other sessions' sandboxes running on the same machine are not mistaken for strays.
    """
    _set_child_subreaper(True)
    try:
        before = _ours(_processes())
        yield
        deadline = time.monotonic() + 3.0
        while True:
            table = _processes()
            new = _ours(table) - before
            alive = {pid: table[pid] for pid in new if table[pid][1] != "Z"}
            if not alive or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        for pid in new - set(alive):  # orphans that already exited and were reparented to us
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        described = [f"pid {pid} uid {row[2]}: {row[3][:200]}" for pid, row in alive.items()]
        assert not alive, f"processes left behind: {described}"
        leftovers = os.listdir(run_parent())
        assert not leftovers, f"run directories left behind: {leftovers}"
    finally:
        _set_child_subreaper(False)


@pytest.fixture(autouse=True)
def no_stray_processes() -> Iterator[None]:
    yield from watch_for_strays()


def run_one(sandbox: LocalBwrapBackend, spec: RunSpec) -> tuple[RunStatus, dict[str, object]]:
    (result,) = sandbox.run_batch([spec])
    return result.status, parse_reply(result)


# --- Selection --------------------------------------------------------------------------------
def test_get_sandbox_reads_the_setting(settings: Any) -> None:
    settings.EVALUATION_SANDBOX_BACKEND = "no-such-backend"
    with pytest.raises(ImproperlyConfigured, match="must be one of bwrap, docker, unsafe"):
        get_sandbox()
    if os.access(BWRAP, os.X_OK):
        settings.EVALUATION_SANDBOX_BACKEND = "bwrap"
        assert isinstance(get_sandbox(), LocalBwrapBackend)


def test_unknown_name_is_improperly_configured() -> None:
    with pytest.raises(ImproperlyConfigured, match="Unknown sandbox backend 'firejail'"):
        get_sandbox("firejail")


def test_self_test_and_fingerprint(sandbox: LocalBwrapBackend) -> None:
    works, detail = sandbox.self_test()
    assert works, detail
    assert sandbox.safe is True
    assert re.fullmatch(r"[0-9a-f]{16}", sandbox.host_fingerprint)
    assert sandbox.host_fingerprint == sandbox.host_fingerprint


def test_empty_batch(sandbox: LocalBwrapBackend) -> None:
    assert sandbox.run_batch([]) == []


# --- Harness replies --------------------------------------------------------------------------
def test_call_returns_json_and_prints_go_to_stderr(sandbox: LocalBwrapBackend) -> None:
    source = "def add(a, b, scale=1):\n    print('debug output')\n    return [(a + b) * scale]\n"
    (result,) = sandbox.run_batch([call_spec(source, "add", [2, 3], {"scale": 10})])
    assert result.status == RunStatus.OK, result
    assert result.stdout == b'{"ok": true, "result": [50]}\n'
    assert "debug output" in result.stderr_tail
    assert result.backend == "bwrap"
    assert result.host_fingerprint == sandbox.host_fingerprint
    assert result.extra["runner_uid"] == (SANDBOX_UID if os.geteuid() == 0 else os.geteuid())


@pytest.mark.parametrize(
    ("source", "error", "message"),
    [
        ("def f(x)\n    return x\n", "SyntaxError", r"^SyntaxError: .* \(solution.py, line 1\)$"),
        (b"def f(x):\n    return '\xff'\n", "EncodingError", r"not valid UTF-8 \(byte 0xff"),
        ("def g(x):\n    return x\n", "MissingEntryPoint", r"no function named 'f'"),
        ("f = 3\n", "MissingEntryPoint", r"'f' in solution.py is not a function"),
        (
            "def f(x):\n    return f(x)\n",
            "RecursionError",
            r"^RecursionError: .* \(solution.py, line 2\)$",
        ),
        (
            "def f(x):\n    return sum(f(x) for _ in [0])\n",
            "RecursionError",
            r"\(solution.py, line 2\)$",
        ),
        (
            "def f(x):\n    return list(map(f, [x]))\n",
            "RecursionError",
            r"\(solution.py, line 2\)$",
        ),
        ("def f(x):\n    return {1, 2}\n", "NotSerializable", r"containing a set"),
        (
            "def f(x):\n    return x[5]\n",
            "Exception",
            r"^IndexError: list index .* \(solution.py, line 2\)$",
        ),
        (
            "import nonexistent_pkg\n",
            "Exception",
            r"ModuleNotFoundError: .*\(solution.py, line 1\)$",
        ),
        ("def f(x):\n    raise SystemExit(3)\n", "Exit", r"exit\(3\)"),
    ],
)
def test_harness_errors_are_clean_one_liners(
    sandbox: LocalBwrapBackend, source: str | bytes, error: str, message: str
) -> None:
    status, reply = run_one(sandbox, call_spec(source, "f", [[1, 2]]))
    assert status == RunStatus.OK
    assert reply["ok"] is False, reply
    assert reply["error"] == error, reply
    assert re.search(message, str(reply["message"])), reply["message"]
    assert "\n" not in str(reply["message"])


def test_deep_but_legal_recursion_works(sandbox: LocalBwrapBackend) -> None:
    source = "def depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n"
    status, reply = run_one(sandbox, call_spec(source, "depth", [9000]))
    assert status == RunStatus.OK
    assert reply == {"ok": True, "result": 9000, "output": ""}


def test_unittest_mode_reports_counts_and_text(sandbox: LocalBwrapBackend) -> None:
    solution = "def double(x):\n    print('noise')\n    return 2 * x\n"
    tests = (
        "import unittest\nfrom solution import double\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_ok(self):\n        self.assertEqual(double(2), 4)\n"
        "    def test_wrong(self):\n        self.assertEqual(double(2), 5)\n"
        "    def test_error(self):\n        double(None)\n"
        "    def test_data(self):\n        import json\n"
        "        self.assertEqual(double(json.load(open('task_data.json'))['k']), 4)\n"
    )
    spec = unittest_spec(
        {"solution.py": solution, "task_data.json": '{"k": 2}'}, {"test_visible.py": tests}
    )
    (result,) = sandbox.run_batch([spec])
    reply = parse_reply(result)
    assert result.status == RunStatus.OK
    assert reply["ok"] is True
    assert (reply["tests_run"], reply["failures"], reply["errors"]) == (4, 1, 1)
    assert "test_wrong" in str(reply["output"])
    assert "FAILED" in str(reply["output"])
    assert "noise" in result.stderr_tail


def test_unittest_mode_reports_a_broken_solution(sandbox: LocalBwrapBackend) -> None:
    tests = "import unittest\nfrom solution import double\n"
    broken = unittest_spec("def double(x) return x\n", {"test_visible.py": tests})
    status, reply = run_one(sandbox, broken)
    assert status == RunStatus.OK
    assert reply["error"] == "SyntaxError"
    assert "(solution.py, line 1)" in str(reply["message"])


# --- Measurement ------------------------------------------------------------------------------
def test_cpu_time_of_a_half_second_loop(sandbox: LocalBwrapBackend) -> None:
    busy = (
        "import time\n\ndef spin(seconds):\n    end = time.process_time() + seconds\n"
        "    while time.process_time() < end:\n        pass\n    return 1\n"
    )
    empty, loop = sandbox.run_batch([call_spec("def spin(s):\n    return 1\n", "spin", [0]),
                                     call_spec(busy, "spin", [0.5])])  # fmt: skip
    assert loop.status == RunStatus.OK, loop
    assert 0.3 <= loop.cpu_s <= 0.7, loop.cpu_s
    assert 0.3 <= loop.cpu_s - empty.cpu_s <= 0.7


def test_peak_rss_of_100_mib(sandbox: LocalBwrapBackend) -> None:
    grab = "def grab(n):\n    block = b'\\x01' * n\n    return len(block)\n"
    runs = sandbox.run_batch(
        [call_spec(grab, "grab", [0]) for _ in range(3)]
        + [call_spec(grab, "grab", [100 * MIB]) for _ in range(3)]
    )
    assert all(r.status == RunStatus.OK for r in runs), runs
    baseline = statistics.median(r.peak_rss_kib for r in runs[:3])
    peak = statistics.median(r.peak_rss_kib for r in runs[3:])
    net_mib = (peak - baseline) / 1024
    assert 97 <= net_mib <= 115, (baseline, peak)  # ~0.1 % error expected
    # The floor: the interpreter's own pages (a cgroup is not charged for shared libraries
    # already cached; without one, wait4's RSS includes them and the small runner's).
    assert 1_000 < baseline < 40_000


def test_cpu_limit_gives_tle_cpu(sandbox: LocalBwrapBackend) -> None:
    spec = call_spec("def f():\n    while True:\n        pass\n", "f", [], cpu_s=0.5, wall_s=10)
    (result,) = sandbox.run_batch([spec])
    assert result.status == RunStatus.TLE_CPU, result
    assert 0.5 <= result.cpu_s < 1.0
    assert result.wall_s < 10  # the CPU limit, not the wall limit, ended it
    assert result.signal == 9


def test_stdin_reaches_the_program(sandbox: LocalBwrapBackend) -> None:
    code = "import sys; data = sys.stdin.buffer.read(); print(len(data), data[-3:].decode())"
    spec = RunSpec(
        files={}, argv=("python3", "-I", "-S", "-c", code), stdin=b"x" * 200_000 + b"end"
    )
    (result,) = sandbox.run_batch([spec])
    assert result.status == RunStatus.OK
    assert result.stdout == b"200003 end\n"


# --- Failures of the sandbox itself -----------------------------------------------------------
def test_unstartable_program_is_a_sandbox_error(sandbox: LocalBwrapBackend) -> None:
    spec = RunSpec(files={}, argv=("/usr/bin/no-such-program",))
    (result,) = sandbox.run_batch([spec])
    assert result.status == RunStatus.SANDBOX_ERROR
    assert "no-such-program" in result.detail


def test_malformed_batch_is_a_sandbox_error_for_every_spec(sandbox: LocalBwrapBackend) -> None:
    bad = RunSpec(files={"../escape.py": b""}, argv=("python3", "-c", "pass"))
    results = sandbox.run_batch([call_spec("def f():\n    return 1\n", "f", []), bad])
    assert [r.status for r in results] == [RunStatus.SANDBOX_ERROR] * 2
    assert "plain relative paths" in results[0].detail
