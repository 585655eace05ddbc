"""LLM-arm benchmarks for docs/benchmarks.md (not a test; run by hand against a migrated
database, e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/test_b):

    .venv/bin/python bench/llm_sweep.py overhead [--template SLUG] [--attempts 10]
    .venv/bin/python bench/llm_sweep.py sweep [--per-template 10] [--samples 10] [--jobs 2]

1. ``overhead``: the agent harness's time per attempt (one model request answered at once by a
   local scripted server, its tool call, one visible-test run, every request recorded in the
   database) versus one bare ``run_visible_tests`` of the same files. Target <= 1.5x.
2. ``sweep``: ``benchmark_llm`` over the bank's static dataset (``build_dataset``), N instances
   per template x K samples, with an instant scripted model that writes each instance's
   efficient reference and submits, on J worker processes. Calibrations are measured first
   (once per host, reported apart). Target: 10 x 10 on 2 workers <= 30 min.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.dev")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from evaluation.bank import known_slugs  # noqa: E402
from evaluation.instances import get_instance  # noqa: E402
from evaluation.llm.units import plan_sweep, run_unit  # noqa: E402
from evaluation.models import Dataset, ModelEndpoint, Sweep  # noqa: E402
from evaluation.sandbox import get_sandbox  # noqa: E402
from evaluation.services import get_or_create_calibration  # noqa: E402
from evaluation.spec import Instance  # noqa: E402
from evaluation.visible_tests import run_visible_tests  # noqa: E402
from tests.llm_server import ScriptedLLM, Tools  # noqa: E402


def _load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f} on {os.cpu_count()} CPUs"


def _endpoint(name: str, base_url: str) -> ModelEndpoint:
    """A fresh endpoint row (earlier bench sweeps of it are dropped, so nothing resumes)."""
    Sweep.objects.filter(endpoint__name=name).delete()
    endpoint, _ = ModelEndpoint.objects.update_or_create(
        name=name, defaults={"base_url": base_url, "model": "instant", "api_key_env": ""}
    )
    return endpoint


def _write_calls(files: dict[str, str]) -> list[tuple[str, dict[str, Any] | str]]:
    return [("write_file", {"path": p, "content": text}) for p, text in files.items()]


# --- 1. Harness overhead per attempt ---------------------------------------------------------
def overhead(slug: str, attempts: int, repeats: int) -> dict[str, Any]:
    instance = get_instance(slug, 1)
    files = dict(instance.references["efficient"])
    sandbox = get_sandbox()
    run_visible_tests(instance, files, sandbox=sandbox)  # warm the runtime and the caches
    direct = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run_visible_tests(instance, files, sandbox=sandbox)
        direct.append(time.perf_counter() - t0)

    def reply(body: dict[str, Any]) -> Tools:
        if not any(m["role"] == "assistant" for m in body["messages"]):
            return Tools(_write_calls(files))
        return Tools([("run_visible_tests", {})])

    per_attempt = []
    with ScriptedLLM(reply) as llm:
        endpoint = _endpoint("bench-overhead", llm.base_url)
        sweep = plan_sweep(
            endpoint=endpoint, condition="C0", instances=[(slug, 1)], samples=repeats,
            attempts=attempts,
        )  # fmt: skip
        for run_id in sweep.runs.order_by("sample").values_list("pk", flat=True):
            run = run_unit(run_id, sandbox=sandbox)
            assert run.attempts_used == attempts, (run.status, run.stop_reason, run.error)
            per_attempt.append((run.duration_s or 0.0) / attempts)
    visible = statistics.median(direct)
    harness = statistics.median(per_attempt)
    return {
        "template": slug,
        "attempts_per_run": attempts,
        "runs": repeats,
        "visible_test_run_s": round(visible, 4),
        "harness_per_attempt_s": round(harness, 4),
        "ratio": round(harness / visible, 3),
        "load": _load(),
    }


# --- 2. A full sweep of the static dataset ---------------------------------------------------
def _solver(instances: list[Instance]) -> Any:
    """An instant model: finds the instance by its README in the task message, writes its
    efficient reference, then submits."""
    readmes = sorted(
        ((i.participant_files.get("README.md", ""), i) for i in instances),
        key=lambda pair: -len(pair[0]),
    )

    def text_of(message: dict[str, Any]) -> str:
        content = message.get("content") or ""
        if isinstance(content, list):
            return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        return str(content)

    def reply(body: dict[str, Any]) -> Tools:
        if any(m["role"] == "tool" for m in body["messages"]):
            return Tools([("submit", {})], usage=(2000, 10))
        task = "\n".join(text_of(m) for m in body["messages"] if m["role"] == "user")
        instance = next(i for readme, i in readmes if readme and readme in task)
        return Tools(_write_calls(dict(instance.references["efficient"])), usage=(3000, 800))

    return reply


def sweep(per_template: int, samples: int, jobs: int) -> dict[str, Any]:
    out = Path(tempfile.mkdtemp(prefix="llm-sweep-dataset-"))
    t0 = time.perf_counter()
    call_command("build_dataset", "--per-template", str(per_template), "--out", str(out),
                 stdout=io.StringIO())  # fmt: skip
    build_s = time.perf_counter() - t0
    dataset = Dataset.objects.get(path=str(out.resolve()))
    pairs = [(i["template"], int(i["seed"])) for i in dataset.instances]
    instances = [get_instance(slug, seed) for slug, seed in pairs]

    sandbox = get_sandbox()
    t0 = time.perf_counter()
    for instance in instances:
        get_or_create_calibration(instance, sandbox)  # measured once per host and input
    calibrate_s = time.perf_counter() - t0

    with ScriptedLLM(_solver(instances)) as llm:
        _endpoint("bench-instant", llm.base_url)
        t0 = time.perf_counter()
        stdout = io.StringIO()
        call_command(
            "benchmark_llm", "--endpoint", "bench-instant", "--condition", "C0", "--dataset",
            dataset.version, "--samples", str(samples), "--attempts", "1", "--jobs", str(jobs),
            "--json", stdout=stdout, stderr=io.StringIO(),
        )  # fmt: skip
        sweep_s = time.perf_counter() - t0
        requests = len(llm.requests)
    results = json.loads(stdout.getvalue())
    overall = results["overall"]
    units = len(pairs) * samples
    return {
        "templates": len(results["templates"]),
        "instances": len(pairs),
        "samples": samples,
        "units": units,
        "jobs": jobs,
        "model_requests": requests,
        "build_dataset_s": round(build_s, 1),
        "calibrations_s": round(calibrate_s, 1),
        "sweep_s": round(sweep_s, 1),
        "per_unit_s": round(sweep_s / units, 2),
        "pass@1": overall["pass@1"],
        "failed_units": overall["failed"],
        "load": _load(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="bench", required=True)
    one = sub.add_parser("overhead")
    one.add_argument("--template", default="sde-binary-palindromes", choices=known_slugs())
    one.add_argument("--attempts", type=int, default=10)
    one.add_argument("--repeats", type=int, default=5)
    two = sub.add_parser("sweep")
    two.add_argument("--per-template", type=int, default=10)
    two.add_argument("--samples", type=int, default=10)
    two.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    if args.bench == "overhead":
        figures = overhead(args.template, args.attempts, args.repeats)
    else:
        figures = sweep(args.per_template, args.samples, args.jobs)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
