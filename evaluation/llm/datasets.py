"""Static datasets in the database: ``build_dataset`` records each manifest it writes, and a
sweep names the dataset version it ran (``Dataset.version`` is the manifest's hash).

A dataset is only runnable while the bank still has the template versions it was built from:
``dataset_instances`` refuses, with a sentence, when a template changed or disappeared.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.db import transaction

from evaluation.bank import BankError, load_template
from evaluation.models import Dataset

MIN_PREFIX = 8


class DatasetError(ValueError):
    """A dataset that cannot be found or no longer matches the bank (one sentence)."""


@transaction.atomic
def record_dataset(manifest: Mapping[str, Any], path: Path | str) -> Dataset:
    """Create or update the row of ``manifest`` (a ``build_dataset`` manifest.json); the same
    manifest written elsewhere only moves ``path``."""
    try:
        version = str(manifest["dataset_version"])
        templates = dict(manifest["templates"])
        entries = list(manifest["instances"])
        instances: list[dict[str, str | int]] = [
            {
                "template": str(e["template"]),
                "version": str(e["version"]),
                "seed": int(e["seed"]),
                "instance_hash": str(e["instance_hash"]),
            }
            for e in entries
        ]
    except (KeyError, TypeError, ValueError) as exc:
        raise DatasetError("This is not a dataset manifest written by build_dataset.") from exc
    seeds = sorted(int(e["seed"]) for e in entries)
    per_template = max(
        (sum(1 for i in instances if i["template"] == slug) for slug in templates), default=0
    )
    row, _ = Dataset.objects.update_or_create(
        version=version,
        defaults={
            "per_template": per_template,
            "first_seed": seeds[0] if seeds else 0,
            "templates": templates,
            "instances": instances,
            "path": str(Path(path).resolve()),
        },
    )
    return row


def find_dataset(version: str) -> Dataset:
    """The dataset whose version is ``version`` or starts with it (at least 8 characters)."""
    version = version.strip().lower()
    if len(version) < MIN_PREFIX:
        raise DatasetError(
            f"Dataset version {version!r} is too short: give at least {MIN_PREFIX} characters."
        )
    matches = list(Dataset.objects.filter(version__startswith=version)[:2])
    if not matches:
        raise DatasetError(
            f"No dataset {version!r} is recorded; build it with build_dataset first."
        )
    if len(matches) > 1:
        raise DatasetError(f"Dataset version {version!r} is ambiguous: give more characters.")
    return matches[0]


def stale_templates(dataset: Dataset) -> list[str]:
    """One sentence per template of ``dataset`` that the bank no longer has as it was."""
    problems = []
    for slug, recorded in sorted(dataset.templates.items()):
        try:
            spec = load_template(slug)
        except BankError:
            problems.append(f"{slug} is no longer in the bank")
            continue
        if spec.version != recorded.get("version"):
            problems.append(
                f"{slug} is version {spec.version} in the bank but {recorded.get('version')} "
                "in the dataset"
            )
        elif recorded.get("content_hash") and spec.content_hash != recorded["content_hash"]:
            problems.append(f"{slug} {spec.version} has changed since the dataset was built")
    return problems


def dataset_instances(dataset: Dataset) -> list[tuple[str, int]]:
    """The dataset's (template slug, seed) pairs, in the manifest's order; a DatasetError if
    the bank's templates no longer match the ones it was built from."""
    problems = stale_templates(dataset)
    if problems:
        raise DatasetError(
            f"Dataset {dataset.version[:12]} no longer matches the bank ({'; '.join(problems)}): "
            "rebuild it with build_dataset."
        )
    return [(str(i["template"]), int(i["seed"])) for i in dataset.instances]
