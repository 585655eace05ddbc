"""``manage.py seed_demo``: idempotently create the demo data a newcomer needs to click around."""

from __future__ import annotations

import json
import os
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from study.demo import DEMO_ADMIN_EMAIL, seed_demo


class Command(BaseCommand):
    help = (
        "Create the demo researcher account (and, as the platform grows, a demo study). "
        "Safe to run repeatedly."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print what exists as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        password = os.environ.get("HAIEVAL_DEMO_PASSWORD", "demo-researcher")
        summary = seed_demo(admin_password=password)
        if options["json"]:
            self.stdout.write(json.dumps(summary, indent=2))
            return
        self.stdout.write(f"Demo admin: {DEMO_ADMIN_EMAIL} / {password} (at /admin/)")
