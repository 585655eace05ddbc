"""``manage.py validate_templates``: the template validation protocol (paper section 4.1,
appendix B).

    validate_templates --baseline ENDPOINT --models E1,E2,... [--templates a,b]
                       [--fidelity-instances 20] [--generalisation-instances 10]
                       [--jobs J] [--json]

For every template (default: the whole bank) the baseline model, then each other model, makes
one-attempt C0 runs on seeds 1..N (one sample each); their graded passes give a
``TemplateValidation`` and the template version's status (``evaluation.llm.validation``):
accepted when the baseline passes at most 5 % and every model at most 10 %. A template that is
already rejected or compromised is not run again. Running the command again resumes: the
sweeps are the same, finished runs are skipped and the validation rows are updated, not
duplicated. Exit code 2 for bad input, 1 when some runs failed on the platform (run it again).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.bank import active_slugs, known_slugs, load_template
from evaluation.llm.sweeps import (
    SweepInputError,
    check_key,
    parse_templates,
    run_locally,
    runnable_units,
)
from evaluation.llm.units import plan_sweep
from evaluation.llm.validation import (
    FIDELITY_INSTANCES,
    FINAL,
    GENERALISATION_INSTANCES,
    decide_status,
    describe,
    record_validation,
    template_status,
)
from evaluation.management.commands._common import usage_error
from evaluation.models import AgentRun, ModelEndpoint, TemplateStatus, TemplateValidation
from evaluation.services import record_template

Role = TemplateValidation.Role


@dataclass
class Row:
    """One line of the table: a model's validation of a template (or why there is none)."""

    template: str
    version: str
    endpoint: ModelEndpoint
    role: str
    validation: TemplateValidation | None = None
    note: str = ""  # "skipped: ..." or "n run(s) failed on the platform"

    def to_json(self) -> dict[str, Any]:
        v = self.validation
        return {
            "endpoint": self.endpoint.name,
            "model": self.endpoint.model,
            "role": self.role,
            "instances": v.instances if v else None,
            "passed": v.passed if v else None,
            "rate": v.rate if v else None,
            "threshold": v.threshold if v else None,
            "within": v.within if v else None,
            "note": self.note,
        }


def _endpoints(baseline: str, models: str) -> tuple[ModelEndpoint, list[ModelEndpoint]]:
    names = [n.strip() for n in models.split(",") if n.strip()]
    if not baseline.strip():
        raise usage_error("--baseline must name the endpoint of the fidelity check.")
    if not names:
        raise usage_error("--models must name at least one endpoint for the generalisation test.")
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise usage_error(f"--models names {twice} twice.")
    if baseline in names:
        raise usage_error(f"{baseline} is the baseline; --models are the other models.")
    found = {e.name: e for e in ModelEndpoint.objects.filter(name__in=[baseline, *names])}
    for name in [baseline, *names]:
        if name not in found:
            known = ", ".join(ModelEndpoint.objects.values_list("name", flat=True)[:20])
            raise usage_error(
                f"Unknown endpoint {name!r}" + (f" (known: {known})." if known else ".")
            )
    chosen = [found[baseline], *(found[n] for n in names)]
    try:
        for endpoint in chosen:
            check_key(endpoint)
    except SweepInputError as exc:
        raise usage_error(str(exc)) from exc
    return chosen[0], chosen[1:]


def _count(options: dict[str, Any], name: str, flag: str) -> int:
    value = int(options[name])
    if not 1 <= value <= 1000:
        raise usage_error(f"{flag} must be from 1 to 1000 instances, got {value}.")
    return value


def _templates(selection: str) -> list[str]:
    slugs = parse_templates(selection)
    unknown = [s for s in slugs if s not in known_slugs()]
    if unknown:
        raise usage_error(f"Unknown template {unknown[0]!r}: it is not in the bank.")
    return slugs or active_slugs()  # a retired template named explicitly is re-validated


def validate(slug: str, endpoint: ModelEndpoint, role: str, n: int, jobs: int) -> Row:
    """Run (or resume) one model's one-attempt C0 runs on seeds 1..n of ``slug``."""
    spec = load_template(slug)
    row = Row(slug, spec.version, endpoint, role)
    sweep = plan_sweep(
        endpoint=endpoint,
        condition="C0",
        instances=[(slug, seed) for seed in range(1, n + 1)],
        samples=1,
        attempts=1,
        purpose="validation",
    )
    run_locally(runnable_units(sweep), jobs=jobs)
    runs = sweep.runs.select_related("evaluation")
    failed = runs.exclude(status=AgentRun.Status.DONE).count()
    if failed:
        row.note = f"{failed} run(s) failed on the platform; run the command again"
        return row
    passed = sum(
        bool(r.evaluation and r.evaluation.report and r.evaluation.report.get("overall_pass"))
        for r in runs
    )
    row.validation = record_validation(
        template=record_template(spec),
        endpoint=endpoint,
        endpoint_settings=sweep.endpoint_settings,
        role=role,
        sweep=sweep,
        instances=runs.count(),
        passed=passed,
    )
    return row


def render(rows: list[Row], statuses: dict[str, TemplateStatus]) -> str:
    lines = [
        f"{'template':<30} {'version':<9} {'model':<24} {'passed/n':>8} {'rate':>5} "
        f"{'max':>5}  status"
    ]
    for row in rows:
        v = row.validation
        counts = f"{v.passed}/{v.instances}" if v else "-"
        rate = f"{v.rate:.2f}" if v else "-"
        limit = f"{v.threshold:.2f}" if v else "-"
        line = f"{row.template[:30]:<30} {row.version:<9} {row.endpoint.name[:24]:<24} "
        line += f"{counts:>8} {rate:>5} {limit:>5}  {statuses[row.template].status}"
        lines.append(line + (f" ({row.note})" if row.note else ""))
    for slug, decided in statuses.items():
        lines.append(f"{slug} {decided.version}: {decided.status}. {decided.reason}")
    return "\n".join(lines)


class Command(BaseCommand):
    help = (
        "Validate templates: one-attempt C0 runs of a baseline model (fidelity, at most 5 % "
        "may pass) and other models (generalisation, at most 10 %); records each template "
        "version's status. Resumable. Exit code 2 for bad input."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--baseline", required=True, help="Endpoint of the fidelity check.")
        parser.add_argument(
            "--models", required=True, help="Comma-separated endpoints of the generalisation test."
        )
        parser.add_argument("--templates", default="", help="Comma-separated slugs (default all).")
        parser.add_argument(
            "--fidelity-instances",
            type=int,
            default=FIDELITY_INSTANCES,
            help=f"Seeds 1..N for the baseline (default {FIDELITY_INSTANCES}).",
        )
        parser.add_argument(
            "--generalisation-instances",
            type=int,
            default=GENERALISATION_INSTANCES,
            help=f"Seeds 1..N for each other model (default {GENERALISATION_INSTANCES}).",
        )
        parser.add_argument("--jobs", type=int, default=1, help="Worker processes (default 1).")
        parser.add_argument("--json", action="store_true", help="Print the results as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        baseline, models = _endpoints(options["baseline"], options["models"])
        fidelity = _count(options, "fidelity_instances", "--fidelity-instances")
        generalisation = _count(options, "generalisation_instances", "--generalisation-instances")
        if options["jobs"] < 1:
            raise usage_error(f"--jobs must be at least 1, got {options['jobs']}.")
        slugs = _templates(options["templates"])
        names = [m.name for m in models]
        rows: list[Row] = []
        statuses: dict[str, TemplateStatus] = {}
        plan = [(baseline, Role.BASELINE, fidelity)]
        plan += [(m, Role.GENERALISATION, generalisation) for m in models]
        for slug in slugs:
            version = load_template(slug).version
            for endpoint, role, n in plan:
                current = template_status(slug, version)
                if current in FINAL:
                    rows.append(Row(slug, version, endpoint, role, note=f"skipped: {current}"))
                    continue
                self.stderr.write(f"{slug} {version}: {endpoint.name} on seeds 1..{n}")
                row = validate(slug, endpoint, role, n, options["jobs"])
                rows.append(row)
                if row.validation is not None:
                    self.stderr.write(f"  {describe(row.validation)}")
                    decide_status(slug, version, models=names)
            statuses[slug] = decide_status(slug, version, models=names)
        if options["json"]:
            self.stdout.write(json.dumps(self._json(rows, statuses), indent=2))
        else:
            self.stdout.write(render(rows, statuses))
        failed = [r for r in rows if r.note and not r.note.startswith("skipped")]
        if failed:
            raise CommandError(
                f"{len(failed)} validation(s) are incomplete because runs failed on the "
                "platform; run the same command again to retry them."
            )

    @staticmethod
    def _json(rows: list[Row], statuses: dict[str, TemplateStatus]) -> dict[str, Any]:
        return {
            "templates": {
                slug: {
                    "version": status.version,
                    "status": status.status,
                    "reason": status.reason,
                    "validations": [r.to_json() for r in rows if r.template == slug],
                }
                for slug, status in statuses.items()
            }
        }
