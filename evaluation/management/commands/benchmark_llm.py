"""``manage.py benchmark_llm``: run an LLM on task instances, C0 or C1, and report pass@k.

    benchmark_llm --endpoint NAME | --base-url URL --model ID [--api-key-env VAR]
                  --condition C0|C1 [--templates a,b] [--dataset VERSION | --instances N]
                  --samples K --attempts A [--budget-tokens T] [--jobs J | --queue]
                  [--out DIR] [--json]

Each (instance, sample) is one unit, an ``AgentRun``. By default this command runs them itself
(``--jobs`` processes; no worker needed); ``--queue`` sends them to the Celery workers and
returns. Running the same command again resumes the sweep: finished units are skipped, units a
crash left running are taken again. Exit code 2 for bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser, OutputWrapper
from django.utils import timezone

from evaluation.llm.results import KS, progress, runs_csv, sweep_results
from evaluation.llm.sweeps import (
    SweepInputError,
    UnitDone,
    adhoc_endpoint,
    check_key,
    enqueue_units,
    parse_templates,
    release_units,
    run_locally,
    runnable_units,
    sweep_instances,
)
from evaluation.llm.units import plan_sweep
from evaluation.management.commands._common import usage_error
from evaluation.models import ModelEndpoint, Sweep

CONDITIONS = ("C0", "C1")


class ProgressBar:
    """``done/total, passed, tokens`` on stderr: one redrawn line on a terminal, plain lines
    otherwise (logs, CI)."""

    WIDTH = 30

    def __init__(
        self, stream: OutputWrapper, total: int, done: int, passed: int, tokens: int
    ) -> None:
        self.stream, self.total = stream, total
        self.done, self.passed, self.tokens = done, passed, tokens
        self.tty = stream.isatty()
        self.draw()

    def update(self, unit: UnitDone) -> None:
        self.done += 1
        self.passed += int(unit.passed)
        self.tokens += unit.tokens
        self.draw()

    def draw(self) -> None:
        text = f"{self.done}/{self.total} done, {self.passed} passed, {self.tokens:,} tokens"
        if self.tty:
            filled = self.WIDTH * self.done // max(self.total, 1)
            bar = "#" * filled + "." * (self.WIDTH - filled)
            ending = "\n" if self.done >= self.total else ""
            self.stream.write(f"\r[{bar}] {text}", ending=ending)
        else:
            self.stream.write(text)
        self.stream.flush()


def _positive(options: dict[str, Any], name: str, label: str) -> int | None:
    value = options[name]
    if value is None:
        return None
    if value < 1:
        raise usage_error(f"{label} must be at least 1, got {value}.")
    return int(value)


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def render(results: dict[str, Any]) -> str:
    header = f"{'template':<32} {'n':>4} {'c':>5}" + "".join(f" {f'pass@{k}':>8}" for k in KS)
    header += f" {'partial':>8} {'attempts':>8} {'tokens':>10} {'cost':>9}"
    lines = [
        f"{results['endpoint']} ({results['model']}), {results['condition']}, dataset "
        f"{(results['dataset'] or 'none')[:12]}",
        header,
    ]
    blocks = [*results["templates"].items(), ("overall", results["overall"])]
    for name, b in blocks:
        attempts = "-" if b["attempts_mean"] is None else f"{b['attempts_mean']:.1f}"
        line = f"{name[:32]:<32} {b['n']:>4} {b['c']:>5}"
        line += "".join(f" {_percent(b[f'pass@{k}']):>8}" for k in KS)
        line += f" {_percent(b['partial_pass']):>8} {attempts:>8}"
        line += f" {b['prompt_tokens'] + b['completion_tokens']:>10,} {b['cost']:>9.4f}"
        lines.append(line)
    overall = results["overall"]
    if overall["interventions"]["count"]:
        by = ", ".join(f"{c} {n}" for c, n in overall["interventions"]["by_category"].items())
        lines.append(f"interventions: {overall['interventions']['count']} ({by})")
    if overall["failed"]:
        lines.append(f"{overall['failed']} run(s) failed on the platform (not counted).")
    return "\n".join(lines)


class Command(BaseCommand):
    help = (
        "Run an LLM agent (C0 autonomous or C1 minimally intervened) on task instances and "
        "report pass@k; resumable. Exit code 2 for bad input."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--endpoint", default="", help="A ModelEndpoint by name.")
        parser.add_argument("--base-url", default="", help="An ad-hoc OpenAI-compatible base URL.")
        parser.add_argument("--model", default="", help="The model id (with --base-url).")
        parser.add_argument(
            "--api-key-env", default="", help="Variable holding the key (with --base-url)."
        )
        parser.add_argument("--condition", required=True, help="C0 or C1.")
        parser.add_argument("--templates", default="", help="Comma-separated template slugs.")
        parser.add_argument("--dataset", default="", help="Dataset version (8+ characters).")
        parser.add_argument("--instances", type=int, help="Seeds 1..N of every template.")
        parser.add_argument("--samples", type=int, required=True, help="Samples per instance.")
        parser.add_argument(
            "--attempts",
            type=int,
            default=25,
            help="Visible-test runs the agent may make (default 25, the paper's figure).",
        )
        parser.add_argument("--budget-tokens", type=int, help="Tokens allowed per run.")
        parser.add_argument("--jobs", type=int, help="Worker processes (default 1).")
        parser.add_argument(
            "--queue", action="store_true", help="Send the units to the Celery workers."
        )
        parser.add_argument("--out", type=Path, help="Write results.json and runs.csv here.")
        parser.add_argument("--json", action="store_true", help="Print the results as JSON.")

    def _endpoint(self, options: dict[str, Any]) -> ModelEndpoint:
        name, base_url, model = options["endpoint"], options["base_url"], options["model"]
        if name and (base_url or model or options["api_key_env"]):
            raise usage_error("Give either --endpoint or --base-url with --model, not both.")
        if name:
            endpoint = ModelEndpoint.objects.filter(name=name).first()
            if endpoint is None:
                known = ", ".join(ModelEndpoint.objects.values_list("name", flat=True)[:20])
                raise usage_error(
                    f"Unknown endpoint {name!r}" + (f" (known: {known})." if known else ".")
                )
            return endpoint
        if not base_url or not model:
            raise usage_error("Give --endpoint NAME, or --base-url URL with --model ID.")
        endpoint, created = adhoc_endpoint(base_url, model, options["api_key_env"])
        self.stderr.write(
            f"Using ad-hoc endpoint {endpoint.name} ({'created' if created else 'recorded'} "
            f"for {base_url}, model {model})."
        )
        return endpoint

    def handle(self, *args: Any, **options: Any) -> None:
        condition = options["condition"].upper()
        if condition not in CONDITIONS:
            raise usage_error(f"--condition must be C0 or C1, got {options['condition']!r}.")
        samples = _positive(options, "samples", "--samples") or 0  # required by the parser
        attempts = _positive(options, "attempts", "--attempts") or 0
        budget = _positive(options, "budget_tokens", "--budget-tokens")
        jobs = _positive(options, "jobs", "--jobs")
        if options["queue"] and jobs is not None:
            raise usage_error("Give either --jobs or --queue, not both.")
        if options["dataset"] and options["instances"] is not None:
            raise usage_error("Give either --dataset or --instances, not both.")
        try:
            endpoint = self._endpoint(options)
            check_key(endpoint)
            dataset, pairs = sweep_instances(
                dataset=options["dataset"],
                instances=options["instances"],
                templates=parse_templates(options["templates"]),
            )
            sweep = plan_sweep(
                endpoint=endpoint,
                condition=condition,
                instances=pairs,
                samples=samples,
                attempts=attempts,
                budget_tokens=budget,
                dataset=dataset,
            )
        except (SweepInputError, ValueError) as exc:  # plan_sweep: ValueError, one sentence
            raise usage_error(str(exc)) from exc
        todo = runnable_units(sweep)
        now = progress(sweep)
        skipped = now["total"] - len(todo)
        self.stderr.write(
            f"Sweep {sweep.pk}: {len(pairs)} instances x {samples} samples = {now['total']} "
            f"units; {skipped} already done or running elsewhere, {len(todo)} to run."
        )
        if options["queue"]:
            enqueue_units(todo)
            self.stderr.write(f"Queued {len(todo)} units for the workers.")
        elif todo:
            bar = ProgressBar(
                self.stderr, now["total"], now["total"] - len(todo), now["passed"],
                now["tokens"],
            )  # fmt: skip
            started = timezone.now()
            try:
                run_locally(todo, jobs=jobs or 1, on_done=bar.update)
            except KeyboardInterrupt:
                released = release_units(todo, claimed_since=started)
                raise CommandError(
                    f"Interrupted: {released} unit(s) in progress were put back; run the same "
                    "command again to resume."
                ) from None
        self._report(sweep, options)

    def _report(self, sweep: Sweep, options: dict[str, Any]) -> None:
        results = sweep_results(sweep)
        out: Path | None = options["out"]
        if out is not None:
            try:
                out.mkdir(parents=True, exist_ok=True)
                (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
                (out / "runs.csv").write_text(runs_csv(sweep))
            except OSError as exc:
                raise CommandError(f"Cannot write the results to {out}: {exc}.") from exc
        if options["json"]:
            self.stdout.write(json.dumps(results, indent=2))
        else:
            self.stdout.write(render(results))
        if out is not None:
            self.stderr.write(f"Wrote {out / 'results.json'} and {out / 'runs.csv'}.")
