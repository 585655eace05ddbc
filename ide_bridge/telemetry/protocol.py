"""The telemetry wire protocol: event vocabulary, payload whitelists and batch validation.

The WebSocket (``ws/trials/<id>/events/``) and the HTTP endpoint (``POST
/ide/telemetry/<id>/events``) speak the same messages and share :func:`parse_batch`:

client -> server::

    {"type": "hello"}
    {"type": "batch", "events": [{"seq": 1, "ts": 1733000000000, "kind": "edit", "data": {...}}]}

server -> client::

    {"type": "ack", "seq": N, "last": M, "stored": a, "duplicates": b, "rejected": c,
     "dropped_keys": d, "errors": [{"seq": s, "reason": "..."}]}
    {"type": "error", "code": "too_many_events", "error": "...", "seq": N}

``seq`` in an ack is the highest sequence number up to which *every* event of the trial is stored;
the client drops its buffered events ``<= seq`` and re-sends the rest. ``last`` is the highest seq
of the batch being acknowledged (``null`` for a hello). ``ts`` is the client clock in ms since the
epoch.

Validation policy (one rule per level):

* **The batch envelope** must be sound: a list of at most :data:`MAX_BATCH_EVENTS` objects, each
  with an integer ``seq`` in ``1..MAX_SEQ``, and at most :data:`MAX_BATCH_BYTES` of JSON. Otherwise
  the *whole batch* is refused with an ``error`` message (HTTP 400/413) and nothing is stored:
  without a trustworthy seq the server cannot acknowledge anything safely.
* **An event** with an unknown ``kind``, a malformed payload, a value over its cap (strings
  ``MAX_STRING_CHARS``; ``code`` and an edit's text ``MAX_CODE_CHARS``; ``run_code.output``
  ``MAX_OUTPUT_CHARS``; values are scalars except ``edit.changes`` and ``extensions.ids``) or a
  bad ``ts`` is not
  stored as sent: a tombstone ``{"kind": "rejected", "data": {"reason": ..., "kind": ...}}``
  takes its seq, so the acknowledged prefix still advances (a dropped seq would otherwise be
  re-sent forever). It is counted in ``rejected`` with its reason in ``errors``.
* **Editing events name their file**: ``file`` is the workspace path of the editable file
  (``app/pricing.py``) that an ``edit``, ``checkpoint``, ``code_reset``, ``selection``, ``paste``,
  ``copy`` or focus event is about; without it an event is about the first editable file (every
  event recorded before multi-file workspaces). ``task_load.files`` counts the editable files.
* **Unknown keys in ``data``** are removed and the event is kept (an older server must not lose
  a newer client's edits); their number is reported in ``dropped_keys``.

NUL characters and unpaired UTF-16 surrogates in strings are stored as U+FFFD.

Every event of a batch lands in exactly one of ``stored`` (new, valid), ``rejected`` (new,
tombstoned) and ``duplicates`` (already stored, or repeated within the batch).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, TypeGuard

MAX_BATCH_EVENTS = 500
# Bytes (UTF-8) of one WebSocket message or of one HTTP body (under Django's 2.5 MB default); a
# larger WebSocket message gets an error and close code 1009.
MAX_BATCH_BYTES = 2 * 1024 * 1024
# Payload caps, per value of ``data``: so no event is larger than its code plus a few kB.
MAX_STRING_CHARS = 2_000  # any string value ...
MAX_CODE_CHARS = 300_000  # ... except code (checkpoint, code_reset; an edit's total text)
MAX_OUTPUT_CHARS = 16_000  # ... and run_code.output (the client truncates it)
MAX_LIST_ITEMS = 200  # extensions.ids
MAX_SEQ = 2_147_483_647  # PositiveIntegerField on PostgreSQL
MAX_TS = 2**53  # JavaScript's safe integers
MAX_CHANGES = 1000  # Monaco changes in one edit event (multi-cursor edits)

REJECTED_KIND = "rejected"  # server-written tombstone; never accepted from a client

_AI = ("request_id",)
# kind -> the keys its ``data`` may carry (RealHumanEval/CUPS vocabulary; notes/ide.md section 4).
KINDS: dict[str, frozenset[str]] = {
    kind: frozenset(keys)
    for kind, keys in {
        # Lifecycle
        "task_load": ("versionId", "length", "file", "files"),
        "trial_start": (),
        "trial_end": ("reason",),
        "submit": ("versionId", "length", "sha256"),
        "skip_task": ("reason",),
        "code_reset": ("code", "versionId", "file"),
        "checkpoint": ("code", "versionId", "reason", "file"),
        # Editing
        "edit": ("changes", "versionId", "isUndoing", "isRedoing", "isFlush", "file"),
        "paste": ("length", "lines", "source", "offset", "file"),
        "copy": ("length", "source", "cut", "file"),
        "selection": ("offset", "length", "line", "column", "selections", "file"),
        "editor_focus": ("file",),
        "editor_blur": ("file",),
        "page_visibility": ("state", "hidden_ms"),
        "window_focus": ("focused", "away_ms"),
        "idle": ("state", "idle_ms"),
        # Runs
        "run_code": ("exit_status", "output", "duration_ms", "timed_out"),
        "run_tests": ("passed", "failed", "errors", "total", "duration_ms"),
        # Inline AI
        "suggestion_request": (*_AI, "trigger", "offset"),
        "suggestion_shown": (*_AI, "length", "lines", "latency_ms"),
        "suggestion_accept": (*_AI, "partial", "length"),
        "suggestion_reject": (*_AI, "reason"),
        "suggestion_ignored": _AI,
        "suggestion_cancel": _AI,
        # Chat
        "chat_user_message": (*_AI, "length", "stage"),
        "chat_assistant_response": (*_AI, "length", "has_code", "latency_ms"),
        "copy_from_chat": (*_AI, "length"),
        "chat_clear": (),
        "chat_feedback": (*_AI, "value"),
        "edit_preview": (*_AI, "length"),
        "edit_accept": (*_AI, "length"),
        "edit_reject": _AI,
        # Compliance (Codespaces)
        "ai_state": ("enabled", "copilot", "provider", "model"),
        "extensions": ("ids",),
    }.items()
}
# Someone asked the assistant for something (an integrity flag in a no-AI arm).
AI_REQUEST_KINDS = frozenset({"suggestion_request", "chat_user_message", "edit_preview"})
PASTE_SOURCES = frozenset({"editor", "ai_panel", "outside"})
COPY_SOURCES = frozenset({"editor", "ai_panel", "page"})

# Timeline categories for the researcher replay (markers by colour).
CATEGORIES: dict[str, str] = {
    **{k: "ai" for k in KINDS if k.startswith(("suggestion_", "chat_", "edit_"))},
    "copy_from_chat": "ai",
    "ai_state": "ai",
    "run_code": "run",
    "run_tests": "run",
    "paste": "paste",
    "submit": "submit",
    "page_visibility": "away",
    "window_focus": "away",
    "idle": "idle",
    "checkpoint": "checkpoint",
    "code_reset": "checkpoint",
    REJECTED_KIND: "rejected",
}


class BatchError(ValueError):
    """The whole batch is refused; ``code`` is machine-readable (``too_large`` and
    ``too_many_events`` map to HTTP 413, the rest to 400)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Event:
    seq: int
    ts: int
    kind: str
    data: dict[str, Any]


@dataclass(slots=True)
class Batch:
    events: list[Event] = field(default_factory=list)  # unique seqs, valid or tombstones
    rejected: dict[int, str] = field(default_factory=dict)  # seq -> reason (tombstoned)
    repeated: int = 0  # seqs that appeared more than once in the batch
    dropped_keys: int = 0

    @property
    def last(self) -> int | None:
        return max((e.seq for e in self.events), default=None)


class _Invalid(Exception):
    pass


def _is_int(value: object, low: int = 0) -> TypeGuard[int]:
    return type(value) is int and value >= low


_SCALARS = (bool, int, float, type(None))
_LONG_STRINGS = {"code": MAX_CODE_CHARS, "output": MAX_OUTPUT_CHARS}
_CHANGE_KEYS = frozenset({"rangeOffset", "rangeLength", "text"})


def _check_values(data: dict[str, Any]) -> None:
    """Every value is a finite scalar or a short string; ``code``/``output`` may be long,
    ``ids`` is a short list of strings and ``changes`` is checked by :func:`_check_edit`."""
    for key, value in data.items():
        kind = type(value)
        if kind is str:
            limit = _LONG_STRINGS.get(key, MAX_STRING_CHARS)
            if len(value) > limit:
                raise _Invalid(f"{key}: longer than {limit} characters")
        elif kind in _SCALARS:
            if kind is float and not math.isfinite(value):
                raise _Invalid(f"{key}: not a finite number")
        elif key == "ids" and kind is list:
            if len(value) > MAX_LIST_ITEMS or not all(
                type(x) is str and len(x) <= MAX_STRING_CHARS for x in value
            ):
                raise _Invalid(f"ids: at most {MAX_LIST_ITEMS} short strings")
        elif key != "changes":
            raise _Invalid(f"{key}: not a number, boolean or string")


def _check_edit(data: dict[str, Any]) -> int:
    """Validate Monaco changes in place; returns how many unknown keys were removed."""
    changes = data.get("changes")
    if type(changes) is not list or len(changes) > MAX_CHANGES:
        raise _Invalid(f"edit.changes: not a list of at most {MAX_CHANGES} changes")
    dropped = total = 0
    for i, change in enumerate(changes):
        if not (
            type(change) is dict
            and _is_int(change.get("rangeOffset"))
            and _is_int(change.get("rangeLength"))
            and type(change.get("text")) is str
        ):
            raise _Invalid("edit.changes: each needs rangeOffset, rangeLength (ints >= 0), text")
        if len(change) != 3:
            dropped += len(change) - 3
            changes[i] = {k: change[k] for k in _CHANGE_KEYS}
        total += len(change["text"])
    if total > MAX_CODE_CHARS:
        raise _Invalid(f"edit.changes: more than {MAX_CODE_CHARS} characters of text")
    return dropped


def _need(cond: bool, reason: str) -> None:
    if not cond:
        raise _Invalid(reason)


def _check_kind(kind: str, data: dict[str, Any]) -> int:
    """Kind-specific rules; returns the number of keys removed inside nested objects."""
    if kind == "edit":
        return _check_edit(data)
    if kind in ("checkpoint", "code_reset"):
        _need(type(data.get("code")) is str, "code: not a string")
    elif kind == "paste":
        _need(_is_int(data.get("length")), "paste.length: not an integer >= 0")
        _need(data.get("source") in PASTE_SOURCES, f"paste.source: one of {sorted(PASTE_SOURCES)}")
    elif kind == "copy":
        _need(data.get("source", "editor") in COPY_SOURCES, "copy.source: unknown")
    elif kind == "page_visibility":
        _need(data.get("state") in ("visible", "hidden"), "page_visibility.state: visible|hidden")
    elif kind == "window_focus":
        _need(type(data.get("focused")) is bool, "window_focus.focused: not a boolean")
    elif kind == "idle":
        _need(data.get("state") in ("start", "end"), "idle.state: start|end")
    for key in ("hidden_ms", "away_ms", "idle_ms"):
        _need(key not in data or _is_int(data[key]), f"{key}: not an integer >= 0")
    return 0


def _clean_event(raw: dict[str, Any]) -> tuple[int, str, dict[str, Any], int]:
    """(ts, kind, data, dropped keys) of a valid event, or ``_Invalid``."""
    ts = raw.get("ts")
    if type(ts) is float and ts.is_integer():
        ts = int(ts)
    if not (_is_int(ts) and ts < MAX_TS):
        raise _Invalid("ts: not an integer number of ms")
    kind = raw.get("kind")
    allowed = KINDS.get(kind) if type(kind) is str else None
    if allowed is None:
        raise _Invalid("unknown kind")
    assert isinstance(kind, str)
    data = raw.get("data", {})
    _need(type(data) is dict, "data: not an object")
    dropped = 0
    if not data.keys() <= allowed:
        kept = {k: v for k, v in data.items() if k in allowed}
        dropped, data = len(data) - len(kept), kept
    _check_values(data)
    dropped += _check_kind(kind, data)
    return ts, kind, data, dropped


def parse_batch(raw_events: object) -> Batch:
    """Validate a batch's ``events`` list (see the module docstring for the policy)."""
    if type(raw_events) is not list:
        raise BatchError("bad_batch", '"events" must be a list of events')
    if len(raw_events) > MAX_BATCH_EVENTS:
        raise BatchError("too_many_events", f"a batch holds at most {MAX_BATCH_EVENTS} events")
    batch = Batch()
    seen: set[int] = set()
    for raw in raw_events:
        seq = raw.get("seq") if type(raw) is dict else None
        if not (_is_int(seq, 1) and seq <= MAX_SEQ):
            raise BatchError("bad_seq", f"every event needs an integer seq in 1..{MAX_SEQ}")
        assert isinstance(raw, dict)
        if seq in seen:
            batch.repeated += 1
            continue
        seen.add(seq)
        try:
            ts, kind, data, dropped = _clean_event(raw)
        except _Invalid as exc:
            batch.events.append(_tombstone(seq, raw.get("ts"), raw.get("kind"), str(exc)))
            batch.rejected[seq] = str(exc)
            continue
        batch.dropped_keys += dropped
        batch.events.append(Event(seq, ts, kind, data))
    return batch


def _tombstone(seq: int, ts: object, kind: object, reason: str) -> Event:
    ts = ts if _is_int(ts) and ts < MAX_TS else 0
    return Event(seq, ts, REJECTED_KIND, {"reason": reason, "kind": str(kind)[:40]})


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")  # NUL and lone UTF-16 surrogates


def dumps_storable(value: Any) -> tuple[Any, str]:
    """``value`` and its compact JSON, for a single INSERT. NUL characters and unpaired
    surrogates, which PostgreSQL's jsonb and UTF-8 refuse, become U+FFFD (in both): one UTF-16
    unit for one, so edit offsets stay right."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if "\\u0000" in text or _UNSTORABLE.search(text):
        value = _sanitise(value)
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return value, text


def _sanitise(value: Any) -> Any:
    if type(value) is str:
        return _UNSTORABLE.sub("\ufffd", value)
    if type(value) is list:
        return [_sanitise(v) for v in value]
    if type(value) is dict:
        return {_sanitise(k): _sanitise(v) for k, v in value.items()}
    return value
