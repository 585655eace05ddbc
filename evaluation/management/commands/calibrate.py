"""``manage.py calibrate --template SLUG [--seed N] [--force]`` or ``calibrate --all [--seeds N]``
(every template of the bank, each distinct set of performance inputs once: what a deployment
runs at set-up so that no participant's first grading waits for a calibration). A template that
declares ``[performance] params`` is calibrated once per combination of those parameters (every
instance shares one of them); the others for seeds 1..N."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.bank import active_slugs, load_template, perf_choices
from evaluation.calibration import perf_fingerprint
from evaluation.instantiate import choose_params, perf_key
from evaluation.management.commands._common import load_instance, open_sandbox, usage_error
from evaluation.services import GradingUnavailable, get_or_create_calibration
from evaluation.spec import TemplateSpec

SEED_SEARCH = 5000  # seeds scanned for one instance of every [performance] combination


def seeds_to_calibrate(template: TemplateSpec, seeds: int) -> list[int]:
    """Seeds whose instances cover every performance input a deployment can meet: one per
    combination of the ``[performance]`` parameters, else seeds 1..N."""
    if not template.perf_params:
        return list(range(1, seeds + 1))
    wanted = {
        tuple(combination)
        for combination in itertools.product(
            *(perf_choices(template.raw["params"][name]) for name in template.perf_params)
        )
    }
    found: dict[tuple[Any, ...], int] = {}
    for seed in range(1, SEED_SEARCH + 1):
        key = tuple(perf_key(template, choose_params(template, seed)).values())
        found.setdefault(key, seed)
        if len(found) == len(wanted):
            break
    return sorted(found.values())


class Command(BaseCommand):
    help = (
        "Measure (or show the cached) efficiency calibration of a template on this host and "
        "sandbox backend. Fails with the reason when naive/efficient is under 3."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--template", help="Template slug (or --all).")
        parser.add_argument(
            "--all",
            action="store_true",
            help="Every active template of the bank (seeds 1..--seeds).",
        )
        parser.add_argument("--seeds", type=int, default=1, help="With --all: seeds 1..N.")
        parser.add_argument("--seed", type=int, default=1, help="Instance whose inputs to use.")
        parser.add_argument("--force", action="store_true", help="Measure again.")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["all"]:
            self.calibrate_all(options["seeds"], options["force"])
            return
        if not options["template"]:
            raise usage_error("Name a template (--template SLUG) or use --all.")
        instance = load_instance(options["template"], options["seed"])
        try:
            record = get_or_create_calibration(instance, open_sandbox(), force=options["force"])
        except GradingUnavailable as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(
                json.dumps({"id": record.row.pk, **record.result.to_json()}, indent=2)
            )
            return
        result = record.result
        self.stdout.write(
            f"calibration {record.row.pk} ({result.backend}, host {result.host_fingerprint[:12]})"
        )
        for t in result.tests:
            capped = " (capped)" if t["naive_capped"] else ""
            self.stdout.write(
                f"  {t['name']}: efficient {t['efficient_net_s']:.3f}s, naive "
                f"{t['naive_net_s']:.3f}s{capped}, hard limit {t['hard_cpu_s']}s"
            )
        self.stdout.write(result.message)

    def calibrate_all(self, seeds: int, force: bool) -> None:
        if not 1 <= seeds <= 1000:
            raise usage_error("--seeds must be from 1 to 1000.")
        sandbox = open_sandbox()
        seen: set[str] = set()
        failed: list[str] = []
        started = time.monotonic()
        for slug in active_slugs():
            for seed in seeds_to_calibrate(load_template(slug), seeds):
                instance = load_instance(slug, seed)
                key = perf_fingerprint(instance)
                if key in seen:  # same performance inputs: the calibration is shared
                    continue
                seen.add(key)
                began = time.monotonic()
                try:
                    record = get_or_create_calibration(instance, sandbox, force=force)
                except GradingUnavailable as exc:
                    failed.append(f"{slug} seed {seed}: {exc}")
                    self.stderr.write(f"{slug} seed {seed}: {exc}")
                    continue
                self.stdout.write(
                    f"{slug} seed {seed}: calibration {record.row.pk}, threshold ratio "
                    f"{record.result.threshold_ratio:.2f} ({record.result.threshold_source}), "
                    f"{time.monotonic() - began:.1f} s"
                )
        self.stdout.write(
            f"{len(seen)} distinct performance inputs in {time.monotonic() - started:.1f} s."
        )
        if failed:
            raise CommandError(f"{len(failed)} calibration(s) failed: " + "; ".join(failed))
