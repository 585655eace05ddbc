"""``manage.py seed_demo [--completed N] [--json]``: idempotent demo data for a first run."""

from __future__ import annotations

import json
import os
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from study.demo.seed import DEMO_ADMIN_EMAIL, seed_demo


class Command(BaseCommand):
    help = (
        "Create (idempotently) the demo researcher and the 'demo' study with participants at "
        "every stage; --completed N adds N participants who went through the whole study. "
        "Prints fresh one-time login links on every run."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--completed",
            type=int,
            default=0,
            help="Participants who complete the whole study (graded work).",
        )
        parser.add_argument("--json", action="store_true", help="Print the summary as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["completed"] < 0:
            from django.core.management.base import CommandError

            raise CommandError("--completed must be 0 or more.", returncode=2)
        password = os.environ.get("HAIEVAL_DEMO_PASSWORD", "demo-researcher")
        summary = seed_demo(admin_password=password, completed=options["completed"])
        if options["json"]:
            self.stdout.write(json.dumps(summary, indent=2))
            return
        self.stdout.write(
            f"Demo admin: {DEMO_ADMIN_EMAIL} / {password} ({summary['admin']['login_url']})"
        )
        self.stdout.write(f"Demo study '{summary['study']}'. One-time participant links:")
        for row in summary["participants"]:
            current = next((t for t in row["trials"] if t["status"] == "active"), None)
            where = (
                f" — open trial {current['period']}: AI mode {current['ai_mode']}"
                if current
                else ""
            )
            self.stdout.write(
                f"  {row['username']:<18} {row['stage']:<11} {row['login_url']}{where}"
            )
