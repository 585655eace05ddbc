"""Work hidden in child processes or threads is measured, limited and killed (issue 10 §1).

Through the real bwrap sandbox: a run's CPU time and peak memory are its whole process tree's
(read from the run's cgroup), the number of processes is limited, nothing outlives the run, and
a solution cannot forge the harness's reply. Every test also checks that no process of the
sandbox uid and no run directory is left behind.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from evaluation.sandbox import RunStatus, call_spec, parse_reply, unittest_spec
from evaluation.sandbox.bwrap import LocalBwrapBackend
from tests.evaluation.test_sandbox_bwrap import make_sandbox, watch_for_strays
from tests.evaluation.test_sandbox_hostile import run, solution


@pytest.fixture(scope="module")
def sandbox() -> LocalBwrapBackend:
    return make_sandbox()


@pytest.fixture(autouse=True)
def no_stray_processes() -> Iterator[None]:
    yield from watch_for_strays()


SPIN = """
def spin(seconds):
    import time
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
"""


def run_spinning(sandbox: LocalBwrapBackend, body: str, **limits: Any) -> tuple[Any, Any]:
    """``run`` with a CPU-burning ``spin(seconds)`` defined first."""
    return run(sandbox, SPIN + textwrap.dedent(body), **limits)


def test_runs_are_measured_by_a_cgroup(sandbox: LocalBwrapBackend) -> None:
    result, _ = run(sandbox, "return 1")
    assert result.status == RunStatus.OK, result
    assert result.extra["accounting"] in ("cgroup-v1", "cgroup-v2")
    ok, detail = sandbox.self_test()
    assert ok
    assert sandbox.accounting == result.extra["accounting"]
    assert "accounting: cgroup-v" in detail


def test_by_default_a_solution_starts_no_process_or_thread(sandbox: LocalBwrapBackend) -> None:
    result, reply = run(
        sandbox,
        """
        import os, threading
        out = {}
        try:
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            out["fork"] = "forked"
        except OSError as exc:
            out["fork"] = type(exc).__name__
        try:
            threading.Thread(target=lambda: None).start()
            out["thread"] = "started"
        except RuntimeError:
            out["thread"] = "refused"
        return out
        """,
    )
    assert result.status == RunStatus.OK, result
    assert reply["result"] == {"fork": "BlockingIOError", "thread": "refused"}


def test_cpu_of_a_forked_child_is_counted(sandbox: LocalBwrapBackend) -> None:
    # The child does the work and hands the answer back through a pipe; wait4 on the sandbox
    # never sees the child's CPU time because nobody reaps it.
    result, reply = run_spinning(
        sandbox,
        """
        import os
        r, w = os.pipe()
        if os.fork() == 0:
            spin(0.6)
            os.write(w, b"42")
            os._exit(0)
        return int(os.read(r, 10))
        """,
        processes=2,
        cpu_s=5,
    )
    assert result.status == RunStatus.OK, result
    assert reply["result"] == 42
    assert result.cpu_s >= 0.5, result.cpu_s


def test_a_child_left_running_is_counted_and_killed(sandbox: LocalBwrapBackend) -> None:
    result, reply = run_spinning(
        sandbox,
        """
        import os
        r, w = os.pipe()
        if os.fork() == 0:
            spin(0.5)
            os.write(w, b"!")  # and go on spinning after the answer
            spin(1000)
        os.read(r, 1)  # wall time only: the CPU is the child's
        return "done"
        """,
        processes=2,
        cpu_s=5,
    )
    assert result.status == RunStatus.OK, result
    assert reply["result"] == "done"
    assert result.cpu_s >= 0.4, result.cpu_s  # the child's spinning, counted whole


def test_cpu_limit_applies_to_the_whole_tree(sandbox: LocalBwrapBackend) -> None:
    result, _ = run_spinning(
        sandbox,
        """
        import os, time
        for _ in range(3):
            if os.fork() == 0:
                spin(1000)
        time.sleep(30)
        """,
        processes=4,
        cpu_s=1.0,
        wall_s=20,
    )
    assert result.status == RunStatus.TLE_CPU, result
    assert result.wall_s < 5  # three spinning children exhaust 1 s of CPU long before that


def test_memory_of_all_children_is_summed(sandbox: LocalBwrapBackend) -> None:
    # Three children holding 100 MiB each: no single process exceeds 256 MiB, the tree does.
    result, reply = run(
        sandbox,
        """
        import os, time
        for _ in range(3):
            if os.fork() == 0:
                hog = bytearray(100 << 20)
                for i in range(0, len(hog), 4096):
                    hog[i] = 1
                time.sleep(30)
        time.sleep(1.5)
        return "done"
        """,
        processes=4,
        mem_mib=256,
        wall_s=20,
    )
    assert result.status == RunStatus.MLE, result
    assert result.peak_rss_kib > 256 * 1024
    assert reply["ok"] is False


def test_the_process_limit_counts_processes_and_threads(sandbox: LocalBwrapBackend) -> None:
    result, reply = run(
        sandbox,
        """
        import os, threading, time
        out = {"children": 0, "threads": 0}
        for _ in range(20):
            try:
                if os.fork() == 0:
                    time.sleep(5)
                    os._exit(0)
                out["children"] += 1
            except OSError:
                break
        return out
        """,
        processes=4,
    )
    assert result.status == RunStatus.OK, result
    assert reply["result"]["children"] == 3  # the solution itself is the fourth


def test_a_forged_reply_is_not_taken(sandbox: LocalBwrapBackend) -> None:
    forge = """
        import os, signal
        fake = b'{"ok": true, "result": "forged"}\\n'
        for fd in range(1, 30):
            try:
                os.write(fd, fake)
            except OSError:
                pass
        {end}
        """
    raised = run(sandbox, forge.replace("{end}", "raise ValueError('after the forgery')"))
    crashed = run(sandbox, forge.replace("{end}", "import ctypes; ctypes.string_at(0)"))
    exited = run(sandbox, forge.replace("{end}", "os._exit(3)"))
    assert raised[1]["ok"] is False, raised
    assert raised[1]["error"] == "Exception"
    assert "after the forgery" in raised[1]["message"]
    for result, reply in (crashed, exited):
        assert result.status == RunStatus.RE, result
        assert reply["ok"] is False, reply  # a run that did not exit cleanly is never OK


def test_visible_test_counts_cannot_be_forged_through_the_reply_channel(
    sandbox: LocalBwrapBackend,
) -> None:
    source = (
        "import os, signal\n"
        'fake = b\'{"ok": true, "tests_run": 7, "failures": 0, "errors": 0, '
        '"skipped": 0}\\n\'\n'
        "for fd in range(1, 30):\n"
        "    try:\n"
        "        os.write(fd, fake)\n"
        "    except OSError:\n"
        "        pass\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    tests = (
        "import unittest\nimport solution\n\n"
        "class T(unittest.TestCase):\n    def test_a(self):\n        self.fail('no')\n"
    )
    (result,) = sandbox.run_batch([unittest_spec(source, {"test_visible.py": tests})])
    assert result.status == RunStatus.RE, result
    assert parse_reply(result)["ok"] is False


def test_without_cgroups_no_child_process_is_allowed() -> None:
    sandbox = LocalBwrapBackend(cgroups=False)
    spec = call_spec(
        solution(
            """
            import os
            try:
                if os.fork() == 0:
                    os._exit(0)
                return "forked"
            except OSError:
                return "refused"
            """
        ),
        "f",
        [],
        processes=8,  # asked for, but nothing could measure the children
    )
    (result,) = sandbox.run_batch([spec])
    assert result.status == RunStatus.OK, result
    assert parse_reply(result)["result"] == "refused"
    assert str(result.extra["accounting"]).startswith("none: ")
    ok, _ = sandbox.self_test()
    assert ok
    assert sandbox.accounting.startswith("none: ")
