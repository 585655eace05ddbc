"""The files of an export package: their paths, the codebook's columns, their manifest entry."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from study.models import Study

CODEBOOK_HEADER = (
    "table", "name", "type", "description", "allowed_values", "units", "missing_values",
    "identifier_class", "export_tier", "deid_rule", "source",
)  # fmt: skip


@dataclass
class FileEntry:
    path: str
    sha256: str
    bytes: int
    rows: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {"path": self.path, "sha256": self.sha256, "bytes": self.bytes, "rows": self.rows}


def data_path(study: Study, table: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]", "", study.slug) or "study"
    return f"data/study-{slug}_description-{table}_data.csv"
