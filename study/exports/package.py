"""Build an export package: streamed CSV files, then the codebook and the reports.

Layout (``DIR`` must be empty or new)::

    README.md  manifest.json  deid_report.json  codebook.csv  datapackage.json
    dataset_description.json  analysis_plan.json  analysis/primary_model.py
    data/study-<slug>_description-<table>_data.csv      # Psych-DS file names, long format

Rows are written as the generators yield them, in chunks, with sha256 and row counts computed
while writing, so memory stays flat however large a table grows. Public packages are scanned as
they are written (:mod:`study.exports.scan`); a hit aborts the export rather than produce a
package that leaks.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import uuid
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from django.conf import settings
from django.utils import timezone

from study.exports import readme
from study.exports.files import CODEBOOK_HEADER, FileEntry, data_path
from study.exports.pgcopy import copy_blocks
from study.exports.pseudonyms import Pseudonymiser, default_scope, export_key
from study.exports.registry import (
    PROFILES,
    ExportContext,
    Profile,
    Row,
    TableSpec,
    iter_rows,
    registered_tables,
    tables_for,
)
from study.exports.scan import PATTERNS, Scanner, SpanCheck
from study.exports.selection import select
from study.models import Study
from study.results.dashboard import trial_table
from study.results.plan import analysis_plan, deviations
from study.results.stats import paired_stats

CHUNK_ROWS = 2000
Progress = Callable[[float, str], None]


@dataclass
class PackageResult:
    out_dir: Path
    manifest: dict[str, Any]
    deid_report: dict[str, Any]
    files: list[FileEntry] = field(default_factory=list)

    @property
    def row_counts(self) -> dict[str, int]:
        return dict(self.manifest["row_counts"])


class CsvSink:
    """A CSV file written in chunks, hashed and counted on the way out."""

    def __init__(
        self,
        path: Path,
        check: Callable[[str], None] | None = None,
        spans: SpanCheck | None = None,
    ) -> None:
        self.path = path
        self._spans = spans
        self._file = path.open("wb")
        self._hash = hashlib.sha256()
        self._buffer = io.StringIO()
        self._writer = csv.writer(self._buffer, lineterminator="\n")
        self._check = check
        self.rows = 0
        self.bytes = 0

    def header(self, names: Iterable[str]) -> None:
        self._writer.writerow(list(names))
        self._flush()

    def write(self, rows: Iterable[Row], on_chunk: Callable[[int], None] | None = None) -> None:
        iterator = iter(rows)
        while chunk := list(islice(iterator, CHUNK_ROWS)):
            if self._spans:
                self._spans.rows(chunk)
            self._writer.writerows(chunk)
            self.rows += len(chunk)
            self._flush()
            if on_chunk:
                on_chunk(len(chunk))

    def write_copy(
        self,
        statements: Sequence[tuple[str, Sequence[Any]]],
        on_chunk: Callable[[int], None] | None = None,
    ) -> None:
        """Append the CSV output of PostgreSQL ``COPY ... TO STDOUT`` statements as it
        streams (one line per row: the statements guarantee no quoted newlines)."""
        tail = ""
        for data in copy_blocks(statements):
            if self._check or self._spans:
                text = data.decode("utf-8", errors="replace")
            if self._check:
                self._check(tail + text)  # a match cut by a block boundary is found too
                tail = text[-64:]
            if self._spans:
                self._spans.text(text)
            self._emit(data)
            rows = data.count(b"\n")
            self.rows += rows
            if on_chunk:
                on_chunk(rows)

    def _flush(self) -> None:
        text = self._buffer.getvalue()
        if self._check:
            self._check(text)
        self._emit(text.encode("utf-8"))
        self._buffer.seek(0)
        self._buffer.truncate()

    def _emit(self, data: bytes) -> None:
        self._file.write(data)
        self._hash.update(data)
        self.bytes += len(data)

    def close(self, relative_to: Path) -> FileEntry:
        self._file.close()
        path = self.path.relative_to(relative_to).as_posix()
        return FileEntry(path, self._hash.hexdigest(), self.bytes, self.rows)


def write_text(root: Path, relative: str, text: str, scanner: Scanner | None) -> FileEntry:
    if scanner:
        scanner.check(text, relative)
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    path.write_bytes(data)
    return FileEntry(relative, hashlib.sha256(data).hexdigest(), len(data))


def _git_commit() -> str | None:
    git = Path(settings.BASE_DIR) / ".git"
    try:
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head
        ref = head[5:]
        if (git / ref).exists():
            return (git / ref).read_text().strip()
        for line in (git / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0]
    except OSError:
        return None
    return None


def _checker(scanner: Scanner | None, where: str, bulk: bool) -> Callable[[str], None] | None:
    if scanner is None:
        return None

    def check(text: str) -> None:
        scanner.check(text, where, identifiers=not bulk)

    return check


class Builder:
    def __init__(self, study: Study, profile: Profile, out_dir: Path, scope: str) -> None:
        self.study, self.profile, self.out = study, profile, out_dir
        self.pseudonymiser = Pseudonymiser(export_key(), scope)
        self.files: list[FileEntry] = []
        self.rows: dict[str, int] = {}
        self.written: list[TableSpec] = []

    def write_tables(self, ctx: ExportContext, scanner: Scanner | None, progress: Progress) -> None:
        tables = tables_for(self.profile)
        estimates = {
            t.name: max(1, t.estimate(ctx) if t.estimate else len(ctx.trials)) for t in tables
        }
        total, done = sum(estimates.values()), 0

        def advance(n: int, table: str) -> None:
            nonlocal done
            done += n
            progress(min(0.97, done / total), table)

        (self.out / "data").mkdir(parents=True, exist_ok=True)
        for spec in tables:
            relative = data_path(self.study, spec.name)
            columns = spec.visible_columns(self.profile)
            spans = SpanCheck.for_table(columns, ctx.trials.values(), relative) if scanner else None
            sink = CsvSink(self.out / relative, _checker(scanner, relative, spec.bulk), spans)
            sink.header(c.name for c in columns)
            progress(min(0.97, done / total), spec.name)

            def on_chunk(n: int, name: str = spec.name) -> None:
                advance(n, name)

            statements = spec.copy(ctx) if spec.copy else None
            if statements is not None:
                sink.write_copy(statements, on_chunk)
            else:
                sink.write(iter_rows(spec, ctx), on_chunk)
            self.files.append(sink.close(self.out))
            self.rows[spec.name] = sink.rows
            self.written.append(spec)

    def codebook(self, scanner: Scanner | None) -> FileEntry:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(CODEBOOK_HEADER)
        for spec in self.written:
            for c in spec.visible_columns(self.profile):
                writer.writerow(
                    (
                        spec.name, c.name, c.type, c.description, c.allowed, c.units,
                        c.missing, c.identifier_class, c.tier, self._rule(c.deid_rule), c.source,
                    )
                )  # fmt: skip
        entry = write_text(self.out, "codebook.csv", buffer.getvalue(), scanner)
        entry.rows = sum(len(s.visible_columns(self.profile)) for s in self.written)
        return entry

    def _rule(self, rule: str) -> str:
        # Generalisation applies only where the profile generalises.
        if rule.startswith("generalize:") and not self.profile.generalize_quasi_identifiers:
            return "keep"
        return rule

    def dropped_fields(self) -> list[dict[str, str]]:
        dropped = []
        for spec in registered_tables():
            if not self.profile.sees(spec.tier):
                dropped.append(
                    {"table": spec.name, "field": "(whole table)", "identifier_class": "",
                     "rule": "drop", "reason": f"{spec.tier} tier only: {spec.description}"}
                )  # fmt: skip
                continue
            for c in spec.columns:
                if not self.profile.sees(c.tier):
                    dropped.append(
                        {"table": spec.name, "field": c.name,
                         "identifier_class": c.identifier_class, "rule": "drop",
                         "reason": f"{c.tier} tier only ({c.source or 'derived'})"}
                    )  # fmt: skip
            for w in spec.withheld:
                if self.profile.name == "public" or not w.reason.startswith("public:"):
                    dropped.append(
                        {"table": spec.name, "field": w.field,
                         "identifier_class": w.identifier_class, "rule": w.rule,
                         "reason": w.reason}
                    )  # fmt: skip
        return dropped


def build_package(
    study: Study,
    profile_name: str,
    out_dir: Path,
    *,
    scope: str | None = None,
    created_by_role: str = "researcher",
    export_id: str | None = None,
    progress: Progress | None = None,
) -> PackageResult:
    """Write a complete package into ``out_dir`` (empty or new) and return its manifest."""
    profile = PROFILES[profile_name]
    out_dir = Path(out_dir)
    if out_dir.exists() and any(out_dir.iterdir()):
        raise FileExistsError(f"{out_dir} is not empty")
    out_dir.mkdir(parents=True, exist_ok=True)
    report_progress: Progress = progress or (lambda fraction, note: None)
    builder = Builder(study, profile, out_dir, scope or default_scope(study.slug, profile.name))
    selection = select(study, profile, builder.pseudonymiser)
    ctx = selection.context
    scanner = None
    if profile.name == "public":
        scanner = Scanner(
            [r.username for r in ctx.participants.values()]
            + [r.internal_id for r in ctx.participants.values()]
        )
    builder.write_tables(ctx, scanner, report_progress)
    report_progress(0.98, "codebook and reports")
    builder.files.append(builder.codebook(scanner))

    pseudonyms = builder.pseudonymiser.describe()
    counts = selection.counts
    deid = {
        "profile": profile.name,
        "time_mode": profile.time_mode,
        "withdrawal_policy": study.withdrawal_policy,
        "n_withdrawn_excluded": counts.get("n_withdrawn_excluded", 0),
        "n_withdrawn_kept": counts.get("n_withdrawn_kept", 0),
        "n_free_text_dropped": ctx.counters.get("n_free_text_dropped", 0),
        "participants": counts,
        "k_anonymity": selection.kanon_report,
        "withheld_counts": dict(sorted(ctx.counters.items())),
        "dropped_fields": builder.dropped_fields(),
        "pseudonyms": pseudonyms,
        "leak_scan": (
            {
                "result": "no hits",
                "patterns": list(PATTERNS),
                "note": "bulk tables are scanned for e-mail addresses and date-times; their "
                "values are whitelisted (numbers, booleans, short lowercase tokens); relative "
                "times of per-trial rows are checked against the trial's span",
            }
            if scanner
            else {"result": "not scanned (internal profile)"}
        ),
    }
    export_id = export_id or uuid.uuid4().hex[:12]
    created_on = timezone.now().date().isoformat()
    manifest: dict[str, Any] = {
        "export_id": export_id,
        "package": f"export_{study.slug}_{profile.name}_{created_on.replace('-', '')}",
        "study": study.slug,
        "profile": profile.name,
        "created_on": created_on,
        "created_by_role": created_by_role,
        "app_version": getattr(settings, "APP_VERSION", ""),
        "git_commit": _git_commit(),
        "options": {**profile.options(), "scope": pseudonyms["scope"]},
        "key_id": pseudonyms["key_id"],
        "key_source": pseudonyms["key_source"],
        "scope": pseudonyms["scope"],
        "tables": [s.name for s in builder.written],
        "row_counts": builder.rows,
    }
    builder.files.append(write_text(out_dir, "deid_report.json", _json(deid), scanner))
    builder.files.append(
        write_text(
            out_dir,
            "dataset_description.json",
            _json(readme.dataset_description(study, profile, builder.written)),
            scanner,
        )
    )
    builder.files.append(
        write_text(out_dir, "analysis/primary_model.py", readme.analysis_script(), scanner)
    )
    builder.files.append(
        write_text(out_dir, "analysis_plan.json", _json(plan_record(study)), scanner)
    )
    text = readme.readme(study, profile, manifest, deid, builder.files, builder.written)
    builder.files.append(write_text(out_dir, "README.md", text, scanner))
    datapackage = readme.datapackage(study, profile, builder.written, builder.files)
    builder.files.append(write_text(out_dir, "datapackage.json", _json(datapackage), scanner))
    manifest["files"] = [f.as_json() for f in builder.files]
    write_text(out_dir, "manifest.json", _json(manifest), scanner)
    report_progress(1.0, "done")
    return PackageResult(out_dir, manifest, deid, builder.files)


def plan_record(study: Study) -> dict[str, Any]:
    """``analysis_plan.json``: the plan now, the plan of every configuration snapshot, and the
    deviations of the dashboard's analysis at export time."""
    rows = trial_table(study)
    by_snapshot = {
        str(version): content.get("analysis_plan")
        for version, content in study.snapshots.order_by("version").values_list(
            "version", "content"
        )
    }
    plan = analysis_plan(study)
    return {
        "plan": plan,
        "plans_by_snapshot_version": by_snapshot,
        "deviations": deviations(paired_stats(rows), plan, (r["analysis_plan"] for r in rows)),
    }


def _json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def make_zip(package_dir: Path, zip_path: Path, arcroot: str) -> str:
    """Zip the package under ``arcroot/`` and return the zip's sha256."""
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in package_dir.rglob("*") if p.is_file()):
            archive.write(path, f"{arcroot}/{path.relative_to(package_dir).as_posix()}")
    digest = hashlib.sha256()
    with zip_path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()
