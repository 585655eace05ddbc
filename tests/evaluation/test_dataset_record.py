"""The repository versions the static dataset it ships: ``evaluation/bank/DATASET.json`` is the
compact record of ``build_dataset --per-template 10`` over the active bank, and it must follow
every template change (rebuild it with the command in the bank's README, section 9)."""

from __future__ import annotations

import json

from evaluation.bank import BANK_DIR, list_templates
from evaluation.instantiate import instantiate

REBUILD = (
    "rebuild it: manage.py build_dataset --per-template 10 --out var/dataset --force "
    "--record evaluation/bank/DATASET.json"
)


def test_the_record_covers_every_active_template_at_its_current_content() -> None:
    record = json.loads((BANK_DIR / "DATASET.json").read_text(encoding="utf-8"))
    active = list_templates()
    assert sorted(record["templates"]) == [t.slug for t in active], REBUILD
    for spec in active:
        entry = record["templates"][spec.slug]
        assert (entry["version"], entry["content_hash"]) == (spec.version, spec.content_hash), (
            f"{spec.slug} changed since the dataset was recorded; {REBUILD}"
        )
        assert sorted(int(seed) for seed in entry["instances"]) == list(range(1, 11))
        assert instantiate(spec, 1).content_hash == entry["instances"]["1"], REBUILD
