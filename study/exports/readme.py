"""The self-describing parts of a package: README.md, datapackage.json (Frictionless Table
Schema, generated from the codebook), dataset_description.json (Psych-DS) and the analysis
script that reproduces the primary model from the package alone."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from study.exports.files import CODEBOOK_HEADER, FileEntry, data_path
from study.exports.registry import Column, Profile, TableSpec
from study.results import glmm

if TYPE_CHECKING:
    from study.models import Study

TIER_TEXT = {
    "public": (
        "**Public / IRB-shareable (tier 2).** Participants appear only under HMAC pseudonyms; "
        "quasi-identifiers are generalised to k-anonymity; there is no free text, no code, no "
        "AI transcript, no username, login code, IP address or contact detail, and times are "
        "relative (seconds since the trial or session started)."
    ),
    "internal": (
        "**Internal (tier 1), for the study team only.** Contains internal ids, usernames, "
        "free-text answers, AI prompts and replies and absolute UTC timestamps. It never "
        "contains vault data (names, e-mail, payment, login codes). Do not share it outside "
        "the team."
    ),
}


def _field(column: Column) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": column.name,
        "type": column.type,
        "description": column.description,
    }
    if column.type == "boolean":
        out["trueValues"], out["falseValues"] = ["true"], ["false"]
    elif column.type == "datetime":
        out["format"] = "default"
    elif column.enum and column.type == "string":
        out["constraints"] = {"enum": column.enum}
    if column.units:
        out["units"] = column.units
    return out


def datapackage(
    study: Study, profile: Profile, tables: Sequence[TableSpec], files: Sequence[FileEntry]
) -> dict[str, Any]:

    by_path = {f.path: f for f in files}
    names = {t.name for t in tables}
    resources: list[dict[str, Any]] = []
    for spec in tables:
        path = data_path(study, spec.name)
        entry = by_path[path]
        schema: dict[str, Any] = {
            "fields": [_field(c) for c in spec.visible_columns(profile)],
            "missingValues": [""],
        }
        if spec.primary_key:
            schema["primaryKey"] = list(spec.primary_key)
        foreign = [
            {"fields": col, "reference": {"resource": table, "fields": ref}}
            for col, table, ref in spec.foreign_keys
            if table in names
        ]
        if foreign:
            schema["foreignKeys"] = foreign
        resources.append(
            {
                "name": spec.name,
                "title": spec.title,
                "description": spec.description,
                "path": path,
                "profile": "tabular-data-resource",
                "format": "csv",
                "mediatype": "text/csv",
                "encoding": "utf-8",
                "dialect": {"delimiter": ",", "lineTerminator": "\n", "header": True},
                "bytes": entry.bytes,
                "hash": f"sha256:{entry.sha256}",
                "schema": schema,
            }
        )
    resources.append(
        {
            "name": "codebook",
            "path": "codebook.csv",
            "profile": "tabular-data-resource",
            "format": "csv",
            "mediatype": "text/csv",
            "encoding": "utf-8",
            "schema": {"fields": [{"name": n, "type": "string"} for n in CODEBOOK_HEADER]},
        }
    )
    for extra, media in (
        ("README.md", "text/markdown"),
        ("deid_report.json", "application/json"),
        ("dataset_description.json", "application/json"),
        ("analysis_plan.json", "application/json"),
        ("analysis/primary_model.py", "text/x-python"),
        ("manifest.json", "application/json"),
    ):
        resources.append(
            {"name": extra.rsplit("/", 1)[-1].split(".")[0].replace("_", "-").lower(),
             "path": extra, "profile": "data-resource", "mediatype": media}
        )  # fmt: skip
    return {
        "profile": "tabular-data-package",
        "name": f"{study.slug}-{profile.name}".lower(),
        "title": f"{study.title} ({profile.name} export)",
        "resources": resources,
    }


def dataset_description(
    study: Study, profile: Profile, tables: Sequence[TableSpec]
) -> dict[str, Any]:
    variables = sorted({c.name for t in tables for c in t.visible_columns(profile)})
    return {
        "@context": "https://schema.org/",
        "@type": "Dataset",
        "name": f"{study.title} ({profile.name} export)",
        "description": "Human-AI collaborative programming study exported by the HAI-Eval "
        "platform; see README.md and codebook.csv.",
        "schemaVersion": "Psych-DS 0.1.0",
        "variableMeasured": variables,
    }


def readme(
    study: Study,
    profile: Profile,
    manifest: dict[str, Any],
    deid: dict[str, Any],
    files: Sequence[FileEntry],
    tables: Sequence[TableSpec],
) -> str:
    k = deid.get("k_anonymity") or {}
    counts = deid["participants"]
    lines = [
        f"# {study.title}: {profile.name} export package",
        "",
        "Exported by the HAI-Eval platform (version "
        f"{manifest['app_version']}) on {manifest['created_on']}, profile `{profile.name}`.",
        "",
        "## What this package is",
        "",
        TIER_TEXT[profile.name],
        "",
        f"It holds {counts.get('n_included', 0)} participants of the study `{study.slug}`: "
        "everyone who consented and answered the screening questionnaire. People who were "
        f"invited but did not consent ({counts.get('n_not_consented', 0)}) or declined "
        f"({counts.get('n_declined', 0)}) are not included.",
        "",
        "## Files",
        "",
        "| file | rows | contents |",
        "|---|---|---|",
    ]

    rows = manifest["row_counts"]
    for spec in tables:
        lines.append(
            f"| `{data_path(study, spec.name)}` | {rows[spec.name]} | {spec.description} |"
        )
    lines += [
        "| `codebook.csv` | | one row per column of every data file: type, description, "
        "allowed values, units, missing values, identifier class, export tier, de-identification "
        "rule, source |",
        "| `datapackage.json` | | Frictionless Table Schema of every data file (from the "
        "codebook) |",
        "| `dataset_description.json` | | Psych-DS / schema.org description |",
        "| `deid_report.json` | | what was generalised, suppressed and dropped, and why |",
        "| `manifest.json` | | sha256, size and row count of every file; export options |",
        "| `analysis_plan.json` | | the analysis plan now and in every configuration snapshot "
        "participants joined under, and where the analysis at export time departed from it |",
        "| `analysis/primary_model.py` | | the pre-registered primary model (the platform's own "
        "code) on this package: `python analysis/primary_model.py` (needs numpy, scipy, pandas "
        "and statsmodels) |",
        "",
        "## How to read the data",
        "",
        "- CSV, UTF-8, comma-separated, `\\n` line ends, one header row, RFC 4180 quoting.",
        "- An **empty cell** is a missing value; the codebook's `missing_values` says why.",
        "- Booleans are `true` / `false`. Several choices in one answer are joined with `|`.",
        "- Long format: join tables on `participant_id` (and `period` for trial-level tables).",
        "- `taskattempts` is the primary analysis table: one row per trial, exactly the model "
        "frame of the primary model, a logistic mixed model `pass_all ~ condition + period + "
        "task_id + (1|participant_id)` (GEE logit with participant clusters when it cannot be "
        "fitted).",
        "- Outcomes of trials whose grading has not finished are empty (`grading_status` says "
        "`queued` or `running`).",
        "",
        "## Time",
        "",
    ]
    if profile.time_mode == "relative":
        lines.append(
            "Times are **relative** only: `t_ms` is milliseconds since the trial started (on "
            "the server clock; within the trial's span widened by 10 minutes, an event whose "
            "client clock was off gets its server receipt time), durations are in seconds or "
            "minutes, and `gap_from_s1_h` is the hours from session 1 to the session, rounded. "
            "No calendar date or clock time of a participant is in the package."
        )
    else:
        lines.append(
            "Columns ending in `_utc` are absolute UTC timestamps (ISO 8601); the relative "
            "columns of the public profile are present too."
        )
    lines += [
        "",
        "## Pseudonyms",
        "",
        f"`participant_id` is `{deid['pseudonyms']['method']}` with scope "
        f"`{manifest['scope']}` and key id `{manifest['key_id']}` (the key itself is kept by the "
        "research team, outside the database and this package). Packages exported with the "
        "same scope and key use the same ids (linkable, e.g. for errata); a different scope "
        "gives unlinkable ids.",
    ]
    if manifest["key_source"] != "environment":
        lines += ["", f"**Warning: the key is a {manifest['key_source']}.**"]
    lines += ["", "## De-identification", ""]
    if profile.generalize_quasi_identifiers:
        qis = ", ".join(f"`{q}`" for q in k.get("quasi_identifiers", []))
        lines.append(
            f"Quasi-identifiers ({qis}) were generalised until every combination is shared by "
            f"at least k = {k.get('k_target')} participants: **achieved k = "
            f"{k.get('k_achieved')}**"
            + (" (target met)." if k.get("k_satisfied") else " (**target not met**).")
            + f" Method: {k.get('method')}."
            + f" Suppressed participants: {k.get('suppressed_records', 0)}. Levels: "
            + ("; ".join(k.get("steps") or []) or "none needed")
            + ". `*` means any value."
        )
        lines.append("")
        lines.append(
            "No free text is included ("
            f"{deid['n_free_text_dropped']} free-text answers dropped); screening answers are "
            "released only for items classified as safe (the `items` table says which)."
        )
    else:
        lines.append("Quasi-identifiers are as collected; free text is included.")
    lines += [
        "",
        f"Withdrawal policy of the study: `{deid['withdrawal_policy']}`. Withdrawn participants "
        f"excluded: {deid['n_withdrawn_excluded']}; kept (status `withdrawn_data_retained`): "
        f"{deid['n_withdrawn_kept']}.",
        "",
        "Never in any package: names, e-mail addresses, payment data, login links or codes, IP "
        "addresses, browser details, signed consent documents, or code. AI prompts and replies "
        "appear only in internal packages (`aitranscripts`).",
        "",
        "## Integrity",
        "",
        "`manifest.json` lists the sha256 of every file: `sha256sum` each file and compare.",
        "",
    ]
    return "\n".join(lines)


def analysis_script() -> str:
    """``analysis/primary_model.py``: the platform's own primary-model module
    (``study.results.glmm``, numpy/scipy/pandas/statsmodels only); run as a script it fits the
    model to this package's task attempts."""
    return Path(glmm.__file__).read_text(encoding="utf-8")
