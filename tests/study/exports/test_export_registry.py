"""The export registry refuses tables that break a tier rule; pseudonyms are keyed, scoped and
never the key; the streaming writer keeps memory flat."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from django.core.exceptions import ImproperlyConfigured

from ide_bridge.telemetry.exports import PUBLIC_KEYS, clean_payload, register_export_tables
from study.exports.package import CsvSink
from study.exports.pseudonyms import DEV_FALLBACK_LABEL, Pseudonymiser, export_key
from study.exports.registry import (
    PROFILES,
    Column,
    ExportContext,
    RegistryError,
    TableSpec,
    iter_rows,
    register_table,
    registered_tables,
    unregister_table,
)

ROOT = Path(__file__).resolve().parents[3]


def no_rows(ctx: ExportContext) -> Iterator[tuple[Any, ...]]:
    yield from ()


def spec(*columns: Column, name: str = "scratch") -> TableSpec:
    return TableSpec(name=name, title="t", description="d", columns=columns, rows=no_rows)


@pytest.mark.parametrize(
    ("column", "message"),
    [
        (Column("pid", "string", "x", identifier_class="direct"), "HMAC pseudonym"),
        (Column("age", "string", "x", identifier_class="quasi"), "generalised"),
        (Column("comment", "string", "x", identifier_class="free_text"), "never public"),
        (Column("at", "datetime", "x"), "relative times"),
        (Column("Bad-Name", "string", "x"), "snake_case"),
        (Column("x", "string", ""), "description"),
        (Column("x", "string", "x", deid_rule="shuffle"), "deid_rule"),
        (Column("x", "string", "x", tier="vault"), "vault"),  # type: ignore[arg-type]
    ],
)
def test_registry_refuses_columns_that_break_the_tier_rules(column: Column, message: str) -> None:
    with pytest.raises(RegistryError, match=message):
        register_table(spec(column))
    assert "scratch" not in {t.name for t in registered_tables()}


def test_internal_columns_may_hold_identifiers_and_free_text() -> None:
    register_table(
        spec(
            Column("pid", "string", "x", identifier_class="direct", deid_rule="hmac"),
            Column("username", "string", "x", identifier_class="direct", tier="internal"),
            Column("note", "string", "x", identifier_class="free_text", tier="internal"),
            Column("at_utc", "datetime", "x", identifier_class="quasi", tier="internal"),
        )
    )
    try:
        table = next(t for t in registered_tables() if t.name == "scratch")
        assert [c.name for c in table.visible_columns(PROFILES["public"])] == ["pid"]
        assert len(table.visible_columns(PROFILES["internal"])) == 4
    finally:
        unregister_table("scratch")


def test_another_app_cannot_take_over_a_table_name() -> None:
    def rows(ctx: ExportContext) -> Iterator[tuple[Any, ...]]:
        yield from ()

    rows.__module__ = "somewhere.else"
    impostor = TableSpec(
        name="participants", title="t", description="d", columns=(Column("x", "string", "x"),),
        rows=rows,
    )  # fmt: skip
    with pytest.raises(RegistryError, match="already registered"):
        register_table(impostor)


def test_ide_bridge_tables_register_idempotently() -> None:
    register_export_tables()
    register_export_tables()
    names = [t.name for t in registered_tables()]
    assert names.count("events") == 1
    assert {"participants", "taskattempts", "events", "aiusage", "aitranscripts"} <= set(names)
    assert names.index("participants") < names.index("taskattempts") < names.index("events")


def test_rows_are_projected_onto_the_profile_columns() -> None:
    def rows(ctx: ExportContext) -> Iterator[tuple[Any, ...]]:
        yield ("S1", "p-amber-fox-417", 3)

    table = TableSpec(
        name="scratchproj", title="t", description="d", rows=rows,
        columns=(
            Column("pid", "string", "x", identifier_class="direct", deid_rule="hmac"),
            Column("username", "string", "x", identifier_class="direct", tier="internal"),
            Column("n", "integer", "x"),
        ),
    )  # fmt: skip
    public = cast(ExportContext, type("Ctx", (), {"profile": PROFILES["public"]})())
    internal = cast(ExportContext, type("Ctx", (), {"profile": PROFILES["internal"]})())
    assert list(iter_rows(table, public)) == [("S1", 3)]
    assert list(iter_rows(table, internal)) == [("S1", "p-amber-fox-417", 3)]


# --- Pseudonyms -----------------------------------------------------------------------------------
def test_pseudonyms_are_keyed_scoped_and_stable(settings: Any) -> None:
    key = export_key()
    assert key.source == "environment"
    one = Pseudonymiser(key, "demo:public")
    assert one("0123456789abcdef") == one("0123456789abcdef")
    assert one("0123456789abcdef") != one("fedcba9876543210")
    assert one("0123456789abcdef") != Pseudonymiser(key, "demo:2027")("0123456789abcdef")
    assert len(one("0123456789abcdef")) == 11
    assert one("0123456789abcdef").startswith("S")
    assert one.describe()["key_id"] == hashlib.sha256(key.secret).hexdigest()[:8]
    assert settings.EXPORT_HMAC_KEY not in str(one.describe())
    settings.EXPORT_HMAC_KEY = "another-long-export-key-0123456789-abcdefgh"
    assert Pseudonymiser(export_key(), "demo:public")("0123456789abcdef") != one("0123456789abcdef")


def test_without_a_key_development_uses_a_labelled_fallback(settings: Any) -> None:
    settings.EXPORT_HMAC_KEY = ""
    key = export_key()
    assert key.is_fallback
    assert key.source == DEV_FALLBACK_LABEL


def test_a_short_key_is_refused_outside_debug(settings: Any) -> None:
    settings.EXPORT_HMAC_KEY = "short"
    settings.DEBUG = False
    with pytest.raises(ImproperlyConfigured, match="shorter"):
        export_key()


def _production_check(**extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "HAIEVAL_"))}
    env.pop("EXPORT_HMAC_KEY", None)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings.production",
        DJANGO_SECRET_KEY="k3y-" + "x7Qp9zLm2Rv8Tn4Wc6Yb1Hd5Jf0Gs3Ka" * 2,
        DJANGO_ALLOWED_HOSTS="study.example.org",
        VAULT_KEYS="wb3J8NiPFLM7kBD0lx1cIf6RCtVaGuEyotVV8vPZg3s=",
        HAIEVAL_VAR_DIR=str(ROOT / "var" / "test-settings"),
        **extra,
    )
    env.pop("REDIS_URL", None)
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_production_refuses_to_start_without_an_export_key() -> None:
    result = _production_check()
    assert result.returncode == 1
    assert "EXPORT_HMAC_KEY is not set" in result.stderr
    assert "Traceback" not in result.stderr
    assert _production_check(EXPORT_HMAC_KEY="e" * 48).returncode == 0


# --- Payload whitelist ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kind", "data", "public"),
    [
        ("paste", {"length": 40, "source": "outside", "text": "secret clipboard"},
         {"length": 40, "source": "outside"}),
        ("run_code", {"output": "Traceback: /home/alice/x.py", "duration_ms": 3},
         {"duration_ms": 3, "output_length": 27}),
        ("trial_end", {"reason": "Alice Moreau"}, None),  # not a token: dropped
        ("trial_end", {"reason": "deadbeefcafebabe"}, None),  # shaped like an internal id
        ("suggestion_shown", {"request_id": "r-1", "length": 12}, {"length": 12}),
        ("extensions", {"ids": ["rare.tool"]}, {"n_extensions": 1}),
        ("run_tests", {"passed": float("nan")}, None),
        ("unknown_kind", {"length": 3}, None),
    ],
)  # fmt: skip
def test_public_payloads_keep_whitelisted_values_only(
    kind: str, data: dict[str, Any], public: dict[str, Any] | None
) -> None:
    cleaned = clean_payload(kind, data, PUBLIC_KEYS)
    assert (None if cleaned is None else json.loads(cleaned)) == public


# --- Streaming writer -----------------------------------------------------------------------------
def event_like_rows(n: int) -> Iterator[tuple[Any, ...]]:
    for i in range(n):
        yield ("SABCDEFGHJK", 1, 2, i, i * 37, "edit", "editing",
               f'{{"chars_inserted":3,"n_changes":1,"versionId":{i}}}')  # fmt: skip


def test_streaming_writer_keeps_memory_flat(tmp_path: Path) -> None:
    peaks = {}
    for n in (20_000, 200_000):
        tracemalloc.start()
        sink = CsvSink(tmp_path / f"events-{n}.csv")
        sink.header(["participant_id", "s", "p", "seq", "t_ms", "kind", "category", "payload"])
        sink.write(event_like_rows(n))
        entry = sink.close(tmp_path)
        peaks[n] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        data = (tmp_path / f"events-{n}.csv").read_bytes()
        assert entry.rows == n
        assert entry.sha256 == hashlib.sha256(data).hexdigest()
        assert entry.bytes == len(data)
    assert (tmp_path / "events-200000.csv").stat().st_size > 15_000_000
    assert peaks[200_000] < 3_000_000  # a few chunks, not the file
    assert peaks[200_000] < 1.5 * peaks[20_000] + 250_000  # ten times the rows, same memory
