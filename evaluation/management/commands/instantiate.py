"""``manage.py instantiate --template SLUG --seed N --out DIR``: render one task instance.

Writes what a participant gets (README, starter, example data, visible tests, legacy files,
``submit``); ``--with-references`` adds ``references/`` for authors (the efficient and naive
references and the literal readings). Hidden cases never leave the engine. Exit code 2 for bad
input.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.bank import BankError, load_template
from evaluation.instantiate import MAX_SEED, instantiate, write_instance


def parse_seed(text: str) -> int:
    """A seed from the command line, or CommandError (exit 2) with one sentence."""
    try:
        seed = int(text, 10)
    except ValueError:
        seed = -1
    if not 0 <= seed <= MAX_SEED:
        raise CommandError(f"Seed {text!r} is not an integer in [0, 2**63 - 1].", returncode=2)
    return seed


def prepare_out_dir(out: Path, force: bool) -> None:
    """Refuse a file or a non-empty directory unless ``force``; create it otherwise."""
    if out.exists() and not out.is_dir():
        raise CommandError(f"Output path {out} exists and is not a directory.", returncode=2)
    if out.is_dir() and any(out.iterdir()) and not force:
        raise CommandError(
            f"Output directory {out} is not empty; pass --force to write into it.", returncode=2
        )
    out.mkdir(parents=True, exist_ok=True)


class Command(BaseCommand):
    # Pure engine CLI: no database or admin involved, so other apps' checks must not block it.
    requires_system_checks: list[str] = []
    help = (
        "Render a bank template for one seed into DIR: the participant's workspace, and with "
        "--with-references also the efficient and naive reference solutions."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--template", required=True, help="Template slug, e.g. sde-binary-palindromes."
        )
        parser.add_argument("--seed", required=True, help="Non-negative integer seed.")
        parser.add_argument("--out", required=True, type=Path, help="Directory to write into.")
        parser.add_argument(
            "--with-references", action="store_true", help="Also write references/*.py."
        )
        parser.add_argument(
            "--force", action="store_true", help="Write into a non-empty directory."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        seed = parse_seed(options["seed"])
        try:
            template = load_template(options["template"])
        except BankError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        out: Path = options["out"]
        prepare_out_dir(out, options["force"])
        try:
            instance = instantiate(template, seed)
        except BankError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        with_references = options["with_references"]
        if not with_references:  # a forced re-run must not leave stale references behind
            shutil.rmtree(out / "references", ignore_errors=True)
        written = write_instance(instance, out, with_references=with_references)
        self.stdout.write(
            f"Wrote {len(written)} files for {template.slug}@{template.version} seed {seed} "
            f"to {out} (instance {instance.content_hash[:12]}, entry point {instance.entry_point})."
        )
