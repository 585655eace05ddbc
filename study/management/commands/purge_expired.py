"""``manage.py purge_expired [--dry-run]``: apply the studies' retention schedules.

For each closed study past its periods (``RetentionPolicy``): deletes the vault contact entries
of its participants and, when configured, its trials' telemetry. Prints what it removed, per
study and in total; each study with removals gets a ``purge`` audit event. ``--dry-run`` only
counts. Run it daily (cron or Celery beat).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from study.audit.retention import purge_expired


def _counts(removed: dict[str, int]) -> str:
    return ", ".join(f"{count} {kind}" for kind, count in sorted(removed.items())) or "nothing"


class Command(BaseCommand):
    help = "Delete contact data and telemetry whose retention period has passed."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="Only count what would be removed."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        dry_run: bool = options["dry_run"]
        summary = purge_expired(dry_run=dry_run)
        verb = "Would remove" if dry_run else "Removed"
        for warning in summary.warnings:
            self.stderr.write(f"Warning: {warning}")
        for item in summary.purged:
            self.stdout.write(f"{item.study}: {verb.lower()} {_counts(item.removed)}")
        self.stdout.write(f"{verb} in total: {_counts(summary.total())}.")
