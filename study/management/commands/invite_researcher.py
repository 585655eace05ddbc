"""``manage.py invite_researcher EMAIL``: create a researcher account and send its invitation."""

from __future__ import annotations

import os
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.validators import validate_email

from study.researchers.services import invite_researcher


class Command(BaseCommand):
    help = (
        "Create a researcher account (staff, 'researcher' group, no password yet) and e-mail it "
        "a one-time link to choose a password. Prints the link too."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("email")
        parser.add_argument(
            "--base-url",
            default=os.environ.get("HAIEVAL_BASE_URL", "http://localhost:8000"),
            help="Public address of the site for the link (default: $HAIEVAL_BASE_URL).",
        )
        parser.add_argument("--superuser", action="store_true", help="Also make a superuser.")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            validate_email(options["email"])
        except ValidationError as exc:
            raise CommandError(f"{options['email']!r} is not an e-mail address.") from exc
        invitation = invite_researcher(
            options["email"], base_url=options["base_url"], superuser=options["superuser"]
        )
        verb = "Created" if invitation.created else "Re-invited"
        self.stdout.write(f"{verb} researcher {invitation.user.email}.")
        self.stdout.write(f"Set-password link (one use): {invitation.set_password_url}")
