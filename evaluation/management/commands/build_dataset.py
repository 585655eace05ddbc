"""``manage.py build_dataset --per-template 10 --out DIR``: the static benchmark dataset.

Layout (byte-identical on re-runs: no timestamps, sorted JSON, ``\\n`` newlines)::

    DIR/manifest.json                      dataset version + sha256 of every file
    DIR/<slug>/<seed>/task/...             what the participant or LLM gets (editable and
                                           read-only files, data, images, diagrams as SVG)
    DIR/<slug>/<seed>/images/<path>.png    each diagram drawn as PNG, for models that take images
    DIR/<slug>/<seed>/evaluation.json      identity, names and every case with expected values
                                           (compact canonical JSON: the cases are large)

Hidden cases live in ``evaluation.json`` beside ``task/``, never inside it. The manifest is
also recorded as a ``Dataset`` row (``evaluation.llm.datasets``), which sweeps name.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from evaluation.bank import BankError, active_slugs, load_template
from evaluation.diagrams import render_png
from evaluation.instantiate import (
    canonical_json,
    evaluation_record,
    instantiate,
    pretty_json,
    write_instance,
)
from evaluation.llm.datasets import record_dataset
from evaluation.management.commands.instantiate import parse_seed, prepare_out_dir
from evaluation.spec import TemplateSpec

MANIFEST = "manifest.json"
FORMAT = 1


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _write_json(path: Path, value: Any, pretty: bool) -> None:
    """Sorted keys and a final newline; compact for the big evaluation specs."""
    encoded = canonical_json(value)
    if pretty:
        encoded = pretty_json(json.loads(encoded)).encode("utf-8")
    path.write_bytes(encoded + b"\n")
    path.chmod(0o644)


def _clear_previous(out: Path) -> None:
    """With --force: remove what an earlier build listed in its manifest, nothing else."""
    manifest = out / MANIFEST
    if not manifest.is_file():
        raise CommandError(
            f"Output directory {out} is not empty and holds no {MANIFEST}; refusing to replace it.",
            returncode=2,
        )
    try:
        previous = json.loads(manifest.read_text(encoding="utf-8"))
        slugs = {entry["template"] for entry in previous["instances"]}
    except (ValueError, KeyError, TypeError) as exc:
        raise CommandError(f"{manifest} is not a dataset manifest.", returncode=2) from exc
    for slug in sorted(slugs):
        target = (out / slug).resolve()
        if target.parent == out.resolve() and target.is_dir():
            shutil.rmtree(target)
    manifest.unlink()


def compact_record(manifest: dict[str, Any]) -> dict[str, Any]:
    """What identifies a built dataset without its files: the dataset version, the templates'
    versions and content hashes, and each instance's seed and hash."""
    instances: dict[str, dict[str, str]] = {}
    for entry in manifest["instances"]:
        instances.setdefault(entry["template"], {})[str(entry["seed"])] = entry["instance_hash"]
    return {
        "dataset_version": manifest["dataset_version"],
        "format": manifest["format"],
        "templates": {
            slug: {**meta, "instances": instances.get(slug, {})}
            for slug, meta in manifest["templates"].items()
        },
    }


class Command(BaseCommand):
    # Engine CLI (it only records the Dataset row): other apps' checks must not block it.
    requires_system_checks: list[str] = []
    help = (
        "Build the static dataset: N seeded instances per template, each with its participant "
        "files under task/ and its hidden evaluation spec in evaluation.json, plus manifest.json."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--per-template", default="10", help="Instances per template (1-1000).")
        parser.add_argument("--out", required=True, type=Path, help="Dataset directory.")
        parser.add_argument("--templates", default="", help="Comma-separated slugs (default: all).")
        parser.add_argument("--first-seed", default="1", help="Seed of the first instance.")
        parser.add_argument(
            "--force", action="store_true", help="Replace a dataset previously built in DIR."
        )
        parser.add_argument(
            "--record",
            type=Path,
            help="Also write the dataset's compact record here (its version, each template's "
            "version and content hash, each instance's hash): the bank keeps it as "
            "evaluation/bank/DATASET.json, so the repository versions the dataset it ships.",
        )

    def _templates(self, selection: str) -> list[TemplateSpec]:
        slugs = [s.strip() for s in selection.split(",") if s.strip()] or active_slugs()
        try:
            return [load_template(slug) for slug in sorted(set(slugs))]
        except BankError as exc:
            raise CommandError(str(exc), returncode=2) from exc

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            count = int(options["per_template"])
        except ValueError:
            count = 0
        if not 1 <= count <= 1000:
            raise CommandError(
                f"--per-template {options['per_template']!r} is not an integer in [1, 1000].",
                returncode=2,
            )
        first = parse_seed(options["first_seed"])
        parse_seed(str(first + count - 1))
        templates = self._templates(options["templates"])
        if not templates:
            raise CommandError("The bank has no templates to build a dataset from.", returncode=2)
        out: Path = options["out"]
        if out.is_dir() and any(out.iterdir()) and options["force"]:
            _clear_previous(out)
        prepare_out_dir(out, force=False)

        entries = []
        for template in templates:
            for seed in range(first, first + count):
                try:
                    instance = instantiate(template, seed)
                except BankError as exc:
                    raise CommandError(str(exc), returncode=2) from exc
                base = out / template.slug / str(seed)
                write_instance(instance, base / "task", with_references=False)
                for svg, source in instance.diagrams.items():  # what a model that takes images gets
                    png = base / "images" / (svg.removesuffix(".svg") + ".png")
                    png.parent.mkdir(parents=True, exist_ok=True)
                    png.write_bytes(render_png(source, svg))
                _write_json(base / "evaluation.json", evaluation_record(instance), pretty=False)
                files = {
                    path.relative_to(base).as_posix(): _sha256(path)
                    for path in sorted(p for p in base.rglob("*") if p.is_file())
                }
                entries.append(
                    {
                        "template": template.slug,
                        "version": template.version,
                        "seed": seed,
                        "path": f"{template.slug}/{seed}",
                        "instance_hash": instance.content_hash,
                        "entry_point": instance.entry_point,
                        "editable": list(instance.editable),
                        "files": files,
                    }
                )
                self.stdout.write(f"{template.slug} seed {seed}: {instance.content_hash[:12]}")
        catalogue = {
            t.slug: {
                "version": t.version,
                "content_hash": t.content_hash,
                "title": t.title,
                "track": t.track,
                "difficulty": t.difficulty,
            }
            for t in templates
        }
        body = {"format": FORMAT, "templates": catalogue, "instances": entries}
        version = hashlib.sha256(canonical_json(body)).hexdigest()
        manifest = {"dataset_version": version, **body}
        _write_json(out / MANIFEST, manifest, pretty=True)
        record_dataset(manifest, out)
        if options["record"]:
            _write_json(options["record"], compact_record(manifest), pretty=True)
        self.stdout.write(
            f"Dataset {version[:12]}: {len(entries)} instances in {out} (recorded in the database)."
        )
