"""Telemetry payloads in export packages: whitelisted values and derived sizes only, and the
PostgreSQL fast path (SQL over jsonb) gives exactly the text the Python path gives."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ide_bridge.telemetry.payloads import (
    DERIVED,
    INTERNAL_ALL,
    PUBLIC_KEYS,
    clean_kind,
    clean_payload,
    sql_from,
    sql_payload,
)

CASES: list[tuple[str, Any]] = [
    ("edit", {"changes": [{"rangeOffset": 0, "rangeLength": 2, "text": "héllo\nwörld"}],
              "versionId": 7, "isFlush": True, "isUndoing": "yes"}),
    ("edit", {"changes": [{"rangeLength": -1, "text": 5}, "junk", {"rangeLength": 2.5}]}),
    ("edit", {"changes": "not a list", "versionId": 1.5}),
    ("edit", {"changes": []}),
    ("checkpoint", {"code": "def f():\n    return '✓'\n", "reason": "interval", "versionId": 3}),
    ("code_reset", {"code": 42}),
    ("paste", {"length": 40, "lines": 2, "source": "outside", "offset": 5, "text": "clip"}),
    ("paste", {"length": None, "source": "Outside"}),
    ("run_code", {"exit_status": 1, "output": "Traceback\n/home/alice", "timed_out": False}),
    ("trial_end", {"reason": "deadbeefcafebabe"}),
    ("trial_end", {"reason": "time_up"}),
    ("chat_feedback", {"value": "thumbs_up", "request_id": "r-1"}),
    ("chat_feedback", {"value": True}),
    ("chat_feedback", {"value": ["x"]}),
    ("extensions", {"ids": ["ms-python.python", "rare.tool"]}),
    ("ai_state", {"enabled": True, "copilot": False, "model": "gpt-x", "provider": "demo"}),
    ("idle", {"state": "end", "idle_ms": 4000, "note": "alice@example.org"}),
    ("selection", {"offset": 1, "length": 0, "line": 1, "column": 0, "selections": [1, 2]}),
    ("editor_focus", {}),
    ("unknown_kind", {"length": 3}),
    ("run_tests", ["not", "an", "object"]),
    ("rejected", {"reason": "unknown kind", "kind": "Whatever"}),
]  # fmt: skip


def test_public_cleaning_keeps_sizes_and_tokens_only() -> None:
    cleaned = {
        (kind, i): clean_payload(kind, data, PUBLIC_KEYS) for i, (kind, data) in enumerate(CASES)
    }
    assert json.loads(cleaned[("edit", 0)] or "") == {
        "n_changes": 1, "chars_inserted": 11, "chars_deleted": 2, "versionId": 7, "isFlush": True,
    }  # fmt: skip
    assert json.loads(cleaned[("edit", 1)] or "") == {
        "n_changes": 3, "chars_inserted": 0, "chars_deleted": -1,
    }  # fmt: skip
    assert json.loads(cleaned[("checkpoint", 4)] or "")["code_length"] == len(CASES[4][1]["code"])
    assert cleaned[("trial_end", 9)] is None
    assert cleaned[("chat_feedback", 13)] is None
    assert json.loads(cleaned[("extensions", 14)] or "") == {"n_extensions": 2}
    assert cleaned[("editor_focus", 18)] is None
    assert cleaned[("rejected", 21)] is None
    text = " ".join(c for c in cleaned.values() if c)
    for secret in ("héllo", "clip", "alice", "Traceback", "gpt-x", "rare.tool", "r-1", "✓"):
        assert secret not in text
    assert clean_kind("edit") == ("edit", "editing")
    assert clean_kind("Edit; DROP") == ("invalid", "other")


def test_internal_cleaning_adds_identifiers_but_never_code() -> None:
    ai = json.loads(clean_payload("ai_state", CASES[15][1], INTERNAL_ALL) or "")
    assert ai == {"model": "gpt-x", "enabled": True, "copilot": False, "provider": "demo"}
    edit = clean_payload("edit", CASES[0][1], INTERNAL_ALL) or ""
    assert "héllo" not in edit
    assert sql_payload(INTERNAL_ALL) is None  # identifiers need the Python path


# --- The PostgreSQL fast path ---------------------------------------------------------------
needs_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the SQL path runs on PostgreSQL only"
)
# Text PostgreSQL can store in jsonb (no NUL, no lone surrogates).
_TEXT = st.text(st.characters(min_codepoint=1, max_codepoint=0xD7FF), max_size=12)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12)
    | st.sampled_from([0.5, -2.25, 3.0]) | _TEXT
    | st.sampled_from(["coding", "outside", "deadbeefcafebabe", "Time_Up", "x" * 40]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)  # fmt: skip
_TEXT_KEYS = {"changes", "code", "ids", "output", "text"}
_KEYS = sorted({k for rules in PUBLIC_KEYS.values() for k in rules} | _TEXT_KEYS)
_CHANGE = st.fixed_dictionaries({}, optional={"text": _TEXT | st.integers(), "rangeLength": _JSON})
_PAYLOAD = st.dictionaries(st.sampled_from(_KEYS), _JSON, max_size=6) | st.builds(
    lambda changes, rest: {"changes": changes, **rest},
    st.lists(_CHANGE | _JSON, max_size=4),
    st.dictionaries(st.sampled_from(_KEYS), _JSON, max_size=3),
)
_KINDS = sorted({*PUBLIC_KEYS, *DERIVED, "editor_focus", "Bogus"})


def _sql_cleaned(rows: list[tuple[str, Any]]) -> list[str | None]:
    payload = sql_payload(PUBLIC_KEYS)
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMP TABLE export_cases (n int, kind text, payload jsonb)")
        try:
            cursor.executemany(
                "INSERT INTO export_cases VALUES (%s, %s, %s::jsonb)",
                [(i, kind, json.dumps(data)) for i, (kind, data) in enumerate(rows)],
            )
            cursor.execute(f"SELECT {payload} FROM {sql_from('export_cases')} ORDER BY n")  # noqa: S608
            return [r[0] for r in cursor.fetchall()]
        finally:
            cursor.execute("DROP TABLE export_cases")


@needs_postgresql
@pytest.mark.django_db
def test_sql_path_gives_the_python_text_for_known_cases() -> None:
    assert _sql_cleaned(CASES) == [clean_payload(k, d, PUBLIC_KEYS) for k, d in CASES]


@needs_postgresql
@pytest.mark.django_db
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(st.sampled_from(_KINDS), _PAYLOAD), min_size=1, max_size=25))
def test_sql_path_gives_the_python_text_for_any_payload(rows: list[tuple[str, Any]]) -> None:
    # The stored form is what PostgreSQL keeps (jsonb drops duplicate keys, normalises numbers).
    assert _sql_cleaned(rows) == [
        clean_payload(k, json.loads(json.dumps(d)), PUBLIC_KEYS) for k, d in rows
    ]
