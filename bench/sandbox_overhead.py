"""Per-run cost of the bwrap sandbox versus a bare interpreter start.

Runs N empty solutions through the bwrap backend, in batches of 10 (one runner each, a fresh
sandbox per run), and takes the median of each run's wall time as the runner measured it (fork
to ``wait4``). In the same invocation, interleaved in blocks, it times N bare
``/usr/bin/python3 -I -S -c pass`` starts, the same ``-c pass`` inside the sandbox, and N
unsandboxed harness runs of the empty solution, so the sandbox's own share and the harness's
share are both visible. Prints one JSON line.

Reproduce: ``.venv/bin/python bench/sandbox_overhead.py --runs 50``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from evaluation.sandbox import RunSpec, call_spec, get_sandbox, harness_source  # noqa: E402

PYTHON = "/usr/bin/python3"
EMPTY = "def solve():\n    return None\n"
BLOCK = 10


def bare_python(count: int) -> list[float]:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        subprocess.run([PYTHON, "-I", "-S", "-c", "pass"], check=True)  # noqa: S603
        times.append(time.perf_counter() - start)
    return times


def bare_harness(count: int, request: bytes, directory: str) -> list[float]:
    times = []
    argv = [PYTHON, "-I", "-S", "-B", os.path.join(directory, "harness.py")]
    for _ in range(count):
        start = time.perf_counter()
        subprocess.run(argv, input=request, capture_output=True, check=True)  # noqa: S603
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    sandbox = get_sandbox("bwrap")
    spec = call_spec(EMPTY, "solve", [])
    pass_spec = RunSpec(files={}, argv=(PYTHON, "-I", "-S", "-c", "pass"))
    sandbox.run_batch([spec] * 3)  # warm caches
    boxed_pass: list[float] = []
    bare: list[float] = []
    harness: list[float] = []
    boxed: list[float] = []
    boxed_cpu: list[float] = []
    batch_wall = 0.0
    with tempfile.TemporaryDirectory() as directory:
        Path(directory, "harness.py").write_bytes(harness_source())
        Path(directory, "work").mkdir()  # the harness's workspace root, /sandbox/work
        Path(directory, "work", "solution.py").write_text(EMPTY)
        done = 0
        while done < args.runs:
            block = min(BLOCK, args.runs - done)
            bare += bare_python(block)
            harness += bare_harness(block, spec.stdin, directory)
            start = time.perf_counter()
            results = sandbox.run_batch([spec] * block)
            batch_wall += time.perf_counter() - start
            assert all(r.status == "OK" for r in results), results
            boxed += [r.wall_s for r in results]
            boxed_cpu += [r.cpu_s for r in results]
            boxed_pass += [r.wall_s for r in sandbox.run_batch([pass_spec] * block)]
            done += block
    bare_ms = statistics.median(bare) * 1000
    boxed_ms = statistics.median(boxed) * 1000
    harness_ms = statistics.median(harness) * 1000
    print(
        json.dumps(
            {
                "runs": args.runs,
                "bare_python_median_ms": round(bare_ms, 2),
                "unsandboxed_harness_median_ms": round(harness_ms, 2),
                "bwrap_python_pass_median_ms": round(statistics.median(boxed_pass) * 1000, 2),
                "bwrap_per_run_median_ms": round(boxed_ms, 2),
                "bwrap_per_run_cpu_median_ms": round(statistics.median(boxed_cpu) * 1000, 2),
                "bwrap_batch_wall_per_run_ms": round(batch_wall / args.runs * 1000, 2),
                "ratio_bwrap_to_bare_python": round(boxed_ms / bare_ms, 2),
                "ratio_bwrap_to_unsandboxed_harness": round(boxed_ms / harness_ms, 2),
                "host_fingerprint": sandbox.fingerprint(),
                "command": f".venv/bin/python bench/sandbox_overhead.py --runs {args.runs}",
            }
        )
    )


if __name__ == "__main__":
    main()
