"""``manage.py vault_dump --study SLUG --user USERNAME [--json]``: the vault, for compensation.

Prints every vault entry of the study with the participant's pseudonymous username (the key the
payment process uses) and the decrypted contact fields. The acting user must hold
``study.view_vault``; each run is recorded as a ``VaultRead``. Exit status 2 for usage errors
(unknown user or study), 1 when the user lacks the permission.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import PermissionDenied
from django.core.management.base import BaseCommand, CommandError, CommandParser

from study.models import Participant, Study, User
from study.vault.models import VaultEntry
from study.vault.services import CONTACT_FIELDS, VAULT_PERMISSION, read_vault


class Command(BaseCommand):
    help = (
        "Print a study's contact and compensation vault (decrypted) with participant usernames. "
        f"The --user must hold {VAULT_PERMISSION}; every run is audited."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", required=True, metavar="SLUG", help="The study's slug.")
        parser.add_argument(
            "--user", required=True, metavar="USERNAME", help="Who reads (for the audit log)."
        )
        parser.add_argument("--json", action="store_true", help="Print a JSON list.")
        parser.add_argument("--purpose", default="compensation", help="Recorded in the audit log.")

    def handle(self, *args: Any, **options: Any) -> None:
        slug, username = options["study"], options["user"]
        user = User.objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"There is no user named {username!r}.", returncode=2)
        known = (
            Study.objects.filter(slug=slug).exists()
            or VaultEntry.objects.filter(study_slug=slug).exists()
        )
        if not known:
            raise CommandError(f"There is no study with the slug {slug!r}.", returncode=2)
        try:
            rows = read_vault(user, slug, options["purpose"])
        except PermissionDenied:
            raise CommandError(
                f"{username} may not read the vault (needs the {VAULT_PERMISSION} permission).",
                returncode=1,
            ) from None
        except ValueError as exc:
            raise CommandError(str(exc), returncode=2) from None
        usernames = dict(
            Participant.objects.filter(
                internal_id__in=[row["internal_id"] for row in rows]
            ).values_list("internal_id", "user__username")
        )
        records = [
            {
                "internal_id": row["internal_id"],
                "username": usernames.get(row["internal_id"]),
                **{name: row[name] for name in CONTACT_FIELDS},
                "external_ids": row["external_ids"],
                "typed_consent_names": row["typed_consent_names"],
            }
            for row in rows
        ]
        if options["json"]:
            self.stdout.write(json.dumps(records, indent=2, ensure_ascii=False))
            return
        columns = ["internal_id", "username", *CONTACT_FIELDS, "external_ids"]
        self.stdout.write("\t".join(columns))
        for record in records:
            external = ";".join(f"{k}={v}" for k, v in record["external_ids"].items())
            values = [str(record[c] or "") for c in columns[:-1]] + [external]
            self.stdout.write("\t".join(value.replace("\t", " ") for value in values))
