"""``manage.py validate_bank [--seeds 20] [--template SLUG ...]``: prove every template works."""

from __future__ import annotations

import json
import re
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.bank import BankError, list_templates, load_template
from evaluation.bank_files import LITERAL_PREFIX
from evaluation.calibration import perf_fingerprint
from evaluation.instantiate import instantiate, perf_key
from evaluation.management.commands._common import open_sandbox, usage_error
from evaluation.runs import workspace_of
from evaluation.sandbox.base import Sandbox
from evaluation.services import GradingUnavailable, grade_instance
from evaluation.spec import Instance, TemplateSpec
from evaluation.trusted_runs import grade_functional_together

# Workspace paths a README names: `path/to/file.ext` in backticks, or a Markdown link target.
_NAMED_PATH = re.compile(r"`([A-Za-z0-9_./-]+\.[A-Za-z0-9]+)`|\]\(([^)\s]+)\)")
ASSET_SUFFIXES = (".svg", ".png", ".jpg", ".jpeg", ".gif", ".webp", ".csv", ".json")


def asset_problems(instance: Instance) -> list[str]:
    """Every image or data file the README names exists in the workspace, and every diagram
    was drawn (an SVG the renderer produced from its source)."""
    problems = []
    readme = instance.participant_files["README.md"]
    workspace = set(instance.participant_files) | set(instance.images)
    for match in _NAMED_PATH.finditer(readme):
        path = (match.group(1) or match.group(2) or "").removeprefix("./")
        if path.lower().endswith(ASSET_SUFFIXES) and "://" not in path and path not in workspace:
            problems.append(f"seed {instance.seed}: the README names {path}, which is not there")
    for path in instance.diagrams:
        if "<svg" not in instance.participant_files.get(path, ""):
            problems.append(f"seed {instance.seed}: the diagram {path} was not drawn")
    return problems


def sharing_problems(instances: list[Instance]) -> list[str]:
    """A template that declares ``[performance] params`` promises that its performance inputs
    depend on those parameters only: instances that agree on them must have the same ones."""
    if not instances or not instances[0].template.perf_params:
        return []
    seen: dict[str, tuple[int, str]] = {}
    problems = []
    for instance in instances:
        key = json.dumps(perf_key(instance.template, instance.params), sort_keys=True)
        fingerprint = perf_fingerprint(instance)
        first = seen.setdefault(key, (instance.seed, fingerprint))
        if first[1] != fingerprint:
            problems.append(
                f"seeds {first[0]} and {instance.seed} agree on the [performance] parameters "
                f"{key} but their performance inputs differ (they may depend on those only)"
            )
    return problems


def literal_problems(instance: Instance, sandbox: Sandbox) -> list[str]:
    """Each literal reading (``references/literal/<variant>``) fails at least one hidden
    functional test: the rule it ignores is tested."""
    problems = []
    for kind, files in instance.references.items():
        if not kind.startswith(LITERAL_PREFIX):
            continue
        rows = grade_functional_together(instance, workspace_of(instance, files), sandbox=sandbox)
        hidden = {c.name for c in instance.hidden_cases if c.kind == "functional"}
        if all(r["verdict"] == "OK" for r in rows if r["name"] in hidden):
            problems.append(
                f"seed {instance.seed}: the literal reading {kind.removeprefix(LITERAL_PREFIX)!r} "
                "passes every hidden functional test (the rule it ignores is not tested)"
            )
    return problems


class Command(BaseCommand):
    help = (
        "For every template and seed: the instance renders; the starter fails (and scores a "
        "partial pass of 0); every image or data file the README names exists and every "
        "diagram renders; the efficient reference passes everything; the naive reference "
        "passes every functional test and fails efficiency; each literal reading "
        "(references/literal/) fails a hidden test; a scored memory check can fail "
        "the naive reference; instances differ across seeds. Exit 1 on any failure."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--seeds", type=int, default=20, help="Seeds 1..N per template.")
        parser.add_argument("--template", action="append", help="Only this slug (repeatable).")
        parser.add_argument(
            "--efficiency-seeds",
            type=int,
            default=3,
            help="Calibrate and check efficiency on the first N seeds (each calibration takes "
            "tens of seconds); functional checks run on every seed.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["seeds"] < 2:
            raise usage_error("--seeds must be at least 2, to compare instances across seeds.")
        try:
            templates = (
                [load_template(s) for s in options["template"]]
                if options["template"]
                else list_templates()
            )
        except BankError as exc:
            raise usage_error(str(exc)) from exc
        sandbox = open_sandbox()
        failures: list[str] = []
        self.efficiency_seeds = options["efficiency_seeds"]
        for template in templates:
            problems = self.validate(template, options["seeds"], sandbox)
            status = "ok" if not problems else f"{len(problems)} problem(s)"
            self.stdout.write(f"{template.slug} {template.version}: {status}")
            for problem in problems:
                self.stdout.write(f"  - {problem}")
            failures.extend(f"{template.slug}: {p}" for p in problems)
        if failures:
            raise CommandError(f"{len(failures)} problem(s) in the bank; see above.", returncode=1)
        self.stdout.write(f"All {len(templates)} template(s) valid over {options['seeds']} seeds.")

    def validate(self, template: TemplateSpec, seeds: int, sandbox: Sandbox) -> list[str]:
        problems: list[str] = []
        instances: list[Instance] = []
        for seed in range(1, seeds + 1):
            try:
                instances.append(instantiate(template, seed))
            except Exception as exc:  # report every rendering failure, keep checking
                problems.append(f"seed {seed} does not render: {exc}")
        if problems:
            return problems
        if len({i.content_hash for i in instances}) != len(instances):
            problems.append("two seeds render identical instances")
        if len({i.participant_files["README.md"] for i in instances}) != len(instances):
            problems.append("two seeds render the same README")
        for instance in instances[:1]:
            problems.extend(asset_problems(instance))
        problems.extend(sharing_problems(instances))
        checked_efficiency: set[str] = set()
        for instance in instances:
            problems.extend(self.validate_instance(instance, sandbox, checked_efficiency))
        return problems

    def validate_instance(
        self, instance: Instance, sandbox: Sandbox, checked_efficiency: set[str]
    ) -> list[str]:
        seed = instance.seed
        problems = []
        starter = instance.starter_files()
        rows = grade_functional_together(instance, workspace_of(instance, starter), sandbox=sandbox)
        if all(r["verdict"] == "OK" for r in rows):
            problems.append(f"seed {seed}: the starter passes every functional test")
        for label in ("efficient", "naive"):
            workspace = workspace_of(instance, instance.references[label])
            rows = grade_functional_together(instance, workspace, sandbox=sandbox)
            bad = [
                f"{r['name']} {r['verdict']} {r['message']}" for r in rows if r["verdict"] != "OK"
            ]
            if bad:
                problems.append(f"seed {seed}: the {label} reference fails {'; '.join(bad[:3])}")
        problems.extend(literal_problems(instance, sandbox))
        fingerprint = perf_fingerprint(instance)
        if fingerprint in checked_efficiency or seed > self.efficiency_seeds:
            return problems
        # Efficiency depends only on the performance inputs: check it once per distinct set.
        checked_efficiency.add(fingerprint)
        try:
            efficient = grade_instance(instance, instance.references["efficient"], sandbox=sandbox)
            naive = grade_instance(instance, instance.references["naive"], sandbox=sandbox)
            graded_starter = grade_instance(instance, starter, sandbox=sandbox)
        except GradingUnavailable as exc:
            return [*problems, f"seed {seed}: {exc}"]
        if not efficient["overall_pass"]:
            failed = [t["name"] for t in efficient["tests"] if t["verdict"] != "OK"]
            problems.append(
                f"seed {seed}: the efficient reference does not pass overall "
                f"(failed {failed}, efficiency {efficient['efficiency']})"
            )
        if naive["efficiency"]["time_ok"]:
            problems.append(
                f"seed {seed}: the naive reference passes the efficiency check "
                f"(ratio {naive['efficiency']['time_ratio']})"
            )
        if graded_starter["partial_pass"] > 0:
            problems.append(
                f"seed {seed}: the starter scores a partial pass of "
                f"{graded_starter['partial_pass']} (it must score 0)"
            )
        if instance.template.memory_check and naive["efficiency"]["memory_ok"]:
            problems.append(
                f"seed {seed}: the memory check can never fail: the naive reference uses "
                f"{naive['efficiency']['memory_net_kib']} KiB net, under the threshold of "
                f"{naive['efficiency']['memory_threshold_kib']} KiB; declare [checks] memory = "
                '"off" or give a naive reference that exceeds it'
            )
        return problems
