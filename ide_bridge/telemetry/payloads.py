"""Which parts of a telemetry payload an export may carry, in Python and in SQL.

Each kind has whitelisted keys with a value rule (numbers, booleans, short lowercase tokens; in
internal packages also identifiers such as request ids) and derived sizes that replace text:
``edit`` -> ``n_changes``, ``chars_inserted``, ``chars_deleted``; ``checkpoint``/``code_reset``
-> ``code_length``; ``run_code`` -> ``output_length``; ``extensions`` -> ``n_extensions``. Code,
run output and clipboard text never leave the server.

The same rules compile to a PostgreSQL expression, so on PostgreSQL the public events table is
written by ``COPY ... TO STDOUT`` (no row passes through Python). Both paths give the same text:
a JSON object with jsonb's key order (length, then bytes) and separators, empty when nothing is
kept.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ide_bridge.telemetry.protocol import KINDS, REJECTED_KIND

_TOKEN = re.compile(r"[a-z][a-z0-9_]{0,31}")
_HEX_ID = re.compile(r"[0-9a-f]{16}")  # never let something shaped like an internal id out
_SQL_WORD = "~ '^[a-z][a-z0-9_]{0,31}$' AND {v} !~ '^[0-9a-f]{16}$'"
_NAME = re.compile(r"^[A-Za-z_]+$")  # keys and kinds spliced into SQL are plain identifiers


@dataclass(frozen=True)
class Rule:
    name: str
    check: Callable[[Any], bool]
    sql: Callable[[str], str] | None  # jsonb expression -> SQL predicate; None: Python only

    def __call__(self, value: Any) -> bool:
        return self.check(value)


def _num(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and math.isfinite(v))


def _bool(v: Any) -> bool:
    return isinstance(v, bool)


def _token(v: Any) -> bool:
    return isinstance(v, str) and bool(_TOKEN.fullmatch(v)) and not _HEX_ID.fullmatch(v)


def _sql_token(e: str) -> str:
    v = f"({e} #>> '{{}}')"
    return f"(jsonb_typeof({e}) = 'string' AND {v} " + _SQL_WORD.replace("{v}", v) + ")"


NUM = Rule("number", _num, lambda e: f"jsonb_typeof({e}) = 'number'")
BOOL = Rule("boolean", _bool, lambda e: f"jsonb_typeof({e}) = 'boolean'")
TOKEN = Rule("token", _token, _sql_token)
SCALAR = Rule(
    "number, boolean or token",
    lambda v: _num(v) or _bool(v) or _token(v),
    lambda e: f"(jsonb_typeof({e}) IN ('number', 'boolean') OR {_sql_token(e)})",
)
TEXT = Rule("text up to 200", lambda v: isinstance(v, str) and len(v) <= 200, None)
IDS = Rule(
    "list of texts",
    lambda v: isinstance(v, list) and all(isinstance(i, str) and len(i) <= 200 for i in v),
    None,
)

PUBLIC_KEYS: dict[str, dict[str, Rule]] = {
    "task_load": {"versionId": NUM, "length": NUM},
    "trial_end": {"reason": TOKEN},
    "submit": {"versionId": NUM, "length": NUM},
    "skip_task": {"reason": TOKEN},
    "code_reset": {"versionId": NUM},
    "checkpoint": {"versionId": NUM, "reason": TOKEN},
    "edit": {"versionId": NUM, "isUndoing": BOOL, "isRedoing": BOOL, "isFlush": BOOL},
    "paste": {"length": NUM, "lines": NUM, "source": TOKEN, "offset": NUM},
    "copy": {"length": NUM, "source": TOKEN, "cut": BOOL},
    "selection": {"offset": NUM, "length": NUM, "line": NUM, "column": NUM},
    "page_visibility": {"state": TOKEN, "hidden_ms": NUM},
    "window_focus": {"focused": BOOL, "away_ms": NUM},
    "idle": {"state": TOKEN, "idle_ms": NUM},
    "run_code": {"exit_status": NUM, "duration_ms": NUM, "timed_out": BOOL},
    "run_tests": {"passed": NUM, "failed": NUM, "errors": NUM, "total": NUM, "duration_ms": NUM},
    "suggestion_request": {"trigger": TOKEN, "offset": NUM},
    "suggestion_shown": {"length": NUM, "lines": NUM, "latency_ms": NUM},
    "suggestion_accept": {"partial": BOOL, "length": NUM},
    "suggestion_reject": {"reason": TOKEN},
    "chat_user_message": {"length": NUM, "stage": TOKEN},
    "chat_assistant_response": {"length": NUM, "has_code": BOOL, "latency_ms": NUM},
    "copy_from_chat": {"length": NUM},
    "chat_feedback": {"value": SCALAR},
    "edit_preview": {"length": NUM},
    "edit_accept": {"length": NUM},
    "ai_state": {"enabled": BOOL, "copilot": BOOL},
}
_AI_ID = {"request_id": TEXT}
_AI_KINDS = ("suggestion_", "chat_", "edit_", "copy_from_chat")
INTERNAL_KEYS: dict[str, dict[str, Rule]] = {
    **{k: _AI_ID for k in (*PUBLIC_KEYS, "suggestion_ignored", "suggestion_cancel", "edit_reject")
       if k.startswith(_AI_KINDS)},
    "submit": {"sha256": TEXT},
    "ai_state": {"provider": TEXT, "model": TEXT},
    "extensions": {"ids": IDS},
    "rejected": {"reason": TEXT, "kind": TEXT},
}  # fmt: skip
INTERNAL_ALL: dict[str, dict[str, Rule]] = {
    kind: {**PUBLIC_KEYS.get(kind, {}), **INTERNAL_KEYS.get(kind, {})}
    for kind in sorted({*PUBLIC_KEYS, *INTERNAL_KEYS})
}


# --- Derived sizes ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Derived:
    key: str
    py: Callable[[dict[str, Any]], int | None]
    sql: str


def _changes(data: dict[str, Any]) -> list[Any] | None:
    changes = data.get("changes")
    return changes if isinstance(changes, list) else None


def _inserted(data: dict[str, Any]) -> int | None:
    changes = _changes(data)
    if changes is None:
        return None
    texts = (c.get("text") for c in changes if isinstance(c, dict))
    return sum(len(t) for t in texts if isinstance(t, str))


def _deleted(data: dict[str, Any]) -> int | None:
    changes = _changes(data)
    if changes is None:
        return None
    lengths = (c.get("rangeLength") for c in changes if isinstance(c, dict))
    return sum(n for n in lengths if type(n) is int)


def _text_length(key: str) -> Callable[[dict[str, Any]], int | None]:
    def length(data: dict[str, Any]) -> int | None:
        value = data.get(key)
        return len(value) if isinstance(value, str) else None

    return length


def _n_ids(data: dict[str, Any]) -> int | None:
    ids = data.get("ids")
    return len(ids) if isinstance(ids, list) else None


_CODE_LENGTH = Derived(
    "code_length",
    _text_length("code"),
    "CASE WHEN jsonb_typeof(payload->'code') = 'string' THEN length(payload->>'code') END",
)
# The edit sums come from one lateral pass over payload->'changes' (``edit_sums`` in
# :func:`sql_from`), exposed as e.n_changes, e.inserted and e.deleted.
DERIVED: dict[str, tuple[Derived, ...]] = {
    "edit": (
        Derived("n_changes", lambda d: len(c) if (c := _changes(d)) is not None else None,
                "e.n_changes"),
        Derived("chars_inserted", _inserted,
                "CASE WHEN e.n_changes IS NOT NULL THEN e.inserted END"),
        Derived("chars_deleted", _deleted, "CASE WHEN e.n_changes IS NOT NULL THEN e.deleted END"),
    ),
    "checkpoint": (_CODE_LENGTH,),
    "code_reset": (_CODE_LENGTH,),
    "run_code": (
        Derived(
            "output_length",
            _text_length("output"),
            "CASE WHEN jsonb_typeof(payload->'output') = 'string' "
            "THEN length(payload->>'output') END",
        ),
    ),
    "extensions": (
        Derived(
            "n_extensions",
            _n_ids,
            "CASE WHEN jsonb_typeof(payload->'ids') = 'array' "
            "THEN jsonb_array_length(payload->'ids') END",
        ),
    ),
}  # fmt: skip

CATEGORY: dict[str, str] = {
    **dict.fromkeys(("task_load", "trial_start", "trial_end", "submit", "skip_task"), "lifecycle"),
    **dict.fromkeys(("edit", "selection", "code_reset", "checkpoint"), "editing"),
    **dict.fromkeys(("paste", "copy"), "clipboard"),
    **dict.fromkeys(("editor_focus", "editor_blur", "page_visibility", "window_focus"), "focus"),
    "idle": "idle",
    **dict.fromkeys(("run_code", "run_tests"), "run"),
    **{k: "ai" for k in INTERNAL_ALL if k.startswith(_AI_KINDS)},
    **dict.fromkeys(("suggestion_ignored", "suggestion_cancel", "chat_clear", "ai_state"), "ai"),
    "extensions": "environment",
    "rejected": "rejected",
}
OTHER = "other"
INVALID_KIND = "invalid"
# The telemetry vocabulary (ide_bridge.protocol) plus the server's tombstone kind.
KNOWN_KINDS: dict[str, str] = {
    kind: CATEGORY.get(kind, OTHER) for kind in sorted({*KINDS, REJECTED_KIND})
}


# --- Python -------------------------------------------------------------------------------------
_ENCODE = json.JSONEncoder(separators=(", ", ": ")).encode  # jsonb's text layout


def clean_kind(kind: str) -> tuple[str, str]:
    """(kind, category) as released: a kind outside the vocabulary becomes ``invalid``."""
    category = KNOWN_KINDS.get(kind)
    return (kind, category) if category is not None else (INVALID_KIND, OTHER)


def clean_payload(kind: str, data: Any, rules: dict[str, dict[str, Rule]]) -> str | None:
    """The whitelisted and derived part of a payload as JSON text, or None. ``data`` is the
    stored payload, decoded or as JSON text (decoded only when something can be kept)."""
    allowed = rules.get(kind)
    derived = DERIVED.get(kind)
    if allowed is None and derived is None:
        return None
    if isinstance(data, str):
        data = json.loads(data)
    if not isinstance(data, dict):
        return None
    out: dict[str, Any] = {}
    for key, rule in (allowed or {}).items():
        if key in data and rule(data[key]):
            out[key] = data[key]
    for d in derived or ():
        value = d.py(data)
        if value is not None:
            out[d.key] = value
    if not out:
        return None
    return _ENCODE({k: out[k] for k in sorted(out, key=lambda k: (len(k), k))})


# --- SQL (PostgreSQL) ---------------------------------------------------------------------------
_FREQUENT = ("edit", "selection", "suggestion_shown", "run_tests", "paste", "idle")


def _branch_order(kind: str) -> tuple[int, str]:
    """Frequent kinds first: CASE tests its branches in order."""
    return (_FREQUENT.index(kind) if kind in _FREQUENT else len(_FREQUENT), kind)


def sql_payload(rules: dict[str, dict[str, Rule]]) -> str | None:
    """A PostgreSQL expression over ``kind``, ``payload`` and the lateral ``e`` of
    :func:`sql_from` giving the same text as :func:`clean_payload`, or None when a rule has no
    SQL form (then only the Python path can apply these rules). The object is assembled as
    text in jsonb's key order, so no intermediate jsonb is built per row."""
    branches = []
    for kind in sorted({*rules, *DERIVED}, key=_branch_order):
        fragments: dict[str, str] = {}
        for key, rule in rules.get(kind, {}).items():
            if rule.sql is None:
                return None
            assert _NAME.match(key), key
            value = f"payload->'{key}'"
            label = f"'\"{key}\": '"
            fragments[key] = f"CASE WHEN {rule.sql(value)} THEN {label} || ({value})::text END"
        for d in DERIVED.get(kind, ()):
            fragments[d.key] = f"'\"{d.key}\": ' || ({d.sql})::text"
        ordered = [fragments[k] for k in sorted(fragments, key=lambda k: (len(k), k))]
        assert _NAME.match(kind), kind
        branches.append(f"WHEN '{kind}' THEN concat_ws(', ', {', '.join(ordered)})")
    return f"NULLIF('{{' || (CASE kind {' '.join(branches)} ELSE '' END) || '}}', '{{}}')"


def sql_from(table: str = "ide_bridge_trialevent") -> str:
    """The FROM clause :func:`sql_payload` needs: the events and, for edits, one pass over
    ``payload->'changes'`` summing inserted and deleted characters."""
    changes = (
        "CASE WHEN kind = 'edit' AND jsonb_typeof(payload->'changes') = 'array' "
        "THEN payload->'changes' END"
    )
    # Constants only: the table name comes from code, never from input.
    return (
        f"{table} LEFT JOIN LATERAL (SELECT jsonb_array_length({changes}) AS n_changes, "  # noqa: S608
        "COALESCE(SUM(length(c->>'text')) FILTER (WHERE jsonb_typeof(c->'text') = 'string'), 0)"
        " AS inserted, COALESCE(SUM((c->>'rangeLength')::numeric) FILTER (WHERE "
        "jsonb_typeof(c->'rangeLength') = 'number' AND (c->>'rangeLength') ~ '^-?[0-9]+$'), 0)"
        f" AS deleted FROM jsonb_array_elements({changes}) c) e ON true"
    )


def sql_kinds_join() -> str:
    """A join adding the released kind and category (``k_kind``, ``k_category``; NULL for a
    kind outside the vocabulary): one hash lookup per row instead of a long CASE."""
    values = ", ".join(f"('{k}', '{c}')" for k, c in sorted(KNOWN_KINDS.items()))
    return f"LEFT JOIN (VALUES {values}) AS k(k_kind, k_category) ON k.k_kind = kind"


SQL_KIND = f"COALESCE(k.k_kind, '{INVALID_KIND}')"
SQL_CATEGORY = f"COALESCE(k.k_category, '{OTHER}')"
