"""``manage.py evaluate --template SLUG --seed N --solution PATH [--json]``.

``PATH`` is the solution file of a task with one editable file, or a workspace directory: its
files at the task's editable paths are graded (missing ones are the starter's; everything
else in the directory is ignored, read-only files come from the instance)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.management.commands._common import load_instance, open_sandbox, usage_error
from evaluation.services import GradingUnavailable, grade_instance
from evaluation.spec import Instance


class Command(BaseCommand):
    help = (
        "Grade a solution file for one instance synchronously (no worker needed) and print the "
        "report. Exits 0 whatever the verdict; 2 for usage errors."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--template", required=True, help="Template slug from the bank.")
        parser.add_argument("--seed", required=True, type=int, help="Instance seed.")
        parser.add_argument(
            "--solution",
            required=True,
            type=Path,
            help="The solution file (a task with one editable file) or a workspace directory.",
        )
        parser.add_argument("--json", action="store_true", help="Print the JSON report.")
        parser.add_argument("--duration-s", type=float, help="Task duration, for PAR-N.")
        parser.add_argument(
            "--time-limit-min",
            type=int,
            help="The time the solver had, in minutes: completion time (PAR-N) is capped at it "
            "(default 60).",
        )
        parser.add_argument("--tokens", type=int, help="LLM tokens used, for the report.")

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["solution"]
        instance = load_instance(options["template"], options["seed"])
        files = solution_files(instance, path)
        limit = options["time_limit_min"]
        if limit is not None and not 1 <= limit <= 24 * 60:
            raise usage_error("--time-limit-min must be a number of minutes from 1 to 1440.")
        try:
            report = grade_instance(
                instance,
                files,
                sandbox=open_sandbox(),
                duration_s=options["duration_s"],
                tokens=options["tokens"],
                time_limit_s=limit * 60 if limit else None,
            )
        except GradingUnavailable as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
        else:
            self.stdout.write(render_table(report))


def solution_files(instance: Instance, path: Path) -> dict[str, str | bytes]:
    """The editable files found at ``path`` (bytes: grading refuses non-UTF-8 with a sentence)."""
    if path.is_dir():
        found = {p: (path / p).read_bytes() for p in instance.editable if (path / p).is_file()}
        if not found:
            raise usage_error(
                f"{path} holds none of this task's editable files ({', '.join(instance.editable)})."
            )
        return dict(found)
    if not path.is_file():
        raise usage_error(f"Solution file {path} does not exist.")
    if len(instance.editable) != 1:
        raise usage_error(
            f"This task has several editable files ({', '.join(instance.editable)}): pass the "
            "directory that holds them."
        )
    return {instance.editable[0]: path.read_bytes()}


def render_table(report: dict[str, Any]) -> str:
    lines = [
        f"{report['template']['slug']} {report['template']['version']} "
        f"seed {report['instance']['seed']}",
        f"{'test':<28} {'kind':<12} {'verdict':<8} {'cpu s':>8} {'peak MiB':>9}  message",
    ]
    for t in report["tests"]:
        cpu = f"{t['cpu_s']:.3f}" if t["cpu_s"] is not None else "-"
        rss = f"{t['peak_rss_kib'] / 1024:.1f}" if t["peak_rss_kib"] is not None else "-"
        name = t["name"][:28]
        lines.append(
            f"{name:<28} {t['kind']:<12} {t['verdict']:<8} {cpu:>8} {rss:>9}  {t['message']}"
        )
    eff = report["efficiency"]
    lines.append(
        f"efficiency: time ratio {eff.get('time_ratio')} "
        f"(threshold {eff.get('time_threshold_ratio')}) "
        f"{'ok' if eff['time_ok'] else 'FAIL'}; memory {eff.get('memory_net_kib')} KiB "
        f"(threshold {eff.get('memory_threshold_kib')}) "
        + ("not scored" if eff["memory_ok"] is None else "ok" if eff["memory_ok"] else "FAIL")
        + ("; borderline" if eff.get("borderline") else "")
    )
    lines.append(
        f"overall pass: {'yes' if report['overall_pass'] else 'no'}; partial pass "
        f"{report['partial_pass']:.2f} ({report['checks']['passed']}/{report['checks']['total']})"
    )
    if report.get("error"):
        lines.append(f"error: {report['error']}")
    return "\n".join(lines)
