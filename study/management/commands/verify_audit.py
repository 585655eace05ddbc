"""``manage.py verify_audit``: recompute the audit log's hash chain.

Exit status 0 with "Audit chain intact: N events" (and the head hash, worth noting down
elsewhere: it also pins the end of the log), or 1 with the first bad seq and the reason.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from study.audit.log import verify_chain


class Command(BaseCommand):
    help = "Verify the audit log's hash chain; exit status 1 at the first broken event."

    def handle(self, *args: Any, **options: Any) -> None:
        result = verify_chain()
        if not result.ok:
            raise CommandError(
                f"Audit chain broken at seq {result.first_bad_seq}: {result.reason} "
                f"({result.n} events before it verified).",
                returncode=1,
            )
        self.stdout.write(f"Audit chain intact: {result.n} events (head hash {result.head_hash}).")
