"""``manage.py calibrate --template SLUG [--seed N] [--force]``."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.management.commands._common import load_instance, open_sandbox
from evaluation.services import GradingUnavailable, get_or_create_calibration


class Command(BaseCommand):
    help = (
        "Measure (or show the cached) efficiency calibration of a template on this host and "
        "sandbox backend. Fails with the reason when naive/efficient is under 3."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--template", required=True)
        parser.add_argument("--seed", type=int, default=1, help="Instance whose inputs to use.")
        parser.add_argument("--force", action="store_true", help="Measure again.")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
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
