"""``manage.py export_study --study SLUG --profile {internal,public} --out DIR [--zip]
[--scope S]``: write an IRB export package (see study/exports/).

Exits with status 2 and one sentence for an unknown study or profile, or an output directory
that is not empty. The export is recorded in the audit log (actor: system).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from study.exports.registry import PROFILES
from study.exports.scan import LeakDetected
from study.exports.services import export_to_directory
from study.models import Study


class Command(BaseCommand):
    help = "Write an export package (README, codebook, datapackage, data/*.csv, manifest)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", required=True, help="Study slug.")
        parser.add_argument("--profile", required=True, help="internal or public.")
        parser.add_argument("--out", required=True, help="Output directory (new or empty).")
        parser.add_argument("--zip", action="store_true", help="Also write <out>.zip.")
        parser.add_argument(
            "--scope", default="", help="Pseudonym scope (default: <study>:<profile>)."
        )
        parser.add_argument("--json", action="store_true", help="Print the summary as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        profile = options["profile"]
        if profile not in PROFILES:
            raise CommandError(
                f"Unknown profile {profile!r}; use one of: {', '.join(sorted(PROFILES))}.",
                returncode=2,
            )
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"No study has the slug {options['study']!r}.", returncode=2)
        out = Path(options["out"]).expanduser().resolve()
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise CommandError(
                f"The output directory {out} is not empty; choose a new one.", returncode=2
            )
        if options["zip"] and out.with_name(out.name + ".zip").exists():
            raise CommandError(f"{out}.zip exists already; choose a new --out.", returncode=2)

        def progress(fraction: float, note: str) -> None:
            if options["verbosity"] > 1:
                sys.stderr.write(f"\r{int(fraction * 100):3d}% {note:<30}")

        try:
            result, zip_path = export_to_directory(
                study,
                profile,
                out,
                scope=options["scope"] or None,
                make_zip_file=options["zip"],
                progress=progress,
            )
        except LeakDetected as exc:
            raise CommandError(str(exc), returncode=1) from exc
        k = result.deid_report.get("k_anonymity") or {}
        summary = {
            "out": str(out),
            "zip": str(zip_path) if zip_path else None,
            "profile": profile,
            "scope": result.manifest["scope"],
            "key_id": result.manifest["key_id"],
            "row_counts": result.row_counts,
            "k_target": k.get("k_target"),
            "k_achieved": k.get("k_achieved"),
            "n_withdrawn_excluded": result.deid_report["n_withdrawn_excluded"],
            "n_withdrawn_kept": result.deid_report["n_withdrawn_kept"],
        }
        if result.manifest["key_source"] != "environment":
            self.stderr.write(
                f"Warning: pseudonyms use a {result.manifest['key_source']}; set EXPORT_HMAC_KEY."
            )
        if options["json"]:
            self.stdout.write(json.dumps(summary, indent=2))
            return
        rows = ", ".join(f"{t} {n}" for t, n in summary["row_counts"].items())
        self.stdout.write(f"Wrote the {profile} package of {study.slug} to {out} ({rows}).")
        if profile == "public":
            self.stdout.write(
                f"k-anonymity: target {k.get('k_target')}, achieved "
                f"{k.get('k_achieved')}; pseudonym key id {summary['key_id']}."
            )
        if zip_path:
            self.stdout.write(f"Zip: {zip_path}")
