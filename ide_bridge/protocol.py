"""The telemetry wire protocol: event vocabulary, payload whitelists and batch validation.

The WebSocket (``ws/trials/<id>/events/``) and the HTTP endpoint (``POST /ide/trials/<id>/events``)
speak the same messages and share :func:`parse_batch`:

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
* **An event** with an unknown ``kind``, a malformed or oversized payload or a bad ``ts`` is not
  stored as sent: a tombstone ``{"kind": "rejected", "data": {"reason": ..., "kind": ...}}``
  takes its seq, so the acknowledged prefix still advances (a dropped seq would otherwise be
  re-sent forever). It is counted in ``rejected`` with its reason in ``errors``.
* **Unknown keys in ``data``** are removed and the event is kept (an older server must not lose
  a newer client's edits); their number is reported in ``dropped_keys``.

Every event of a batch lands in exactly one of ``stored`` (new, valid), ``rejected`` (new,
tombstoned) and ``duplicates`` (already stored, or repeated within the batch).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

MAX_BATCH_EVENTS = 500
# Characters of one WebSocket message or bytes of one HTTP body (under Django's 2.5 MB default).
MAX_BATCH_BYTES = 2 * 1024 * 1024
# JSON size of one event's ``data``; code-carrying kinds may hold a whole solution.py (<= 256 KiB).
MAX_PAYLOAD_BYTES = 16 * 1024
MAX_CODE_PAYLOAD_BYTES = 300 * 1024
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
        "task_load": ("versionId", "length"),
        "trial_start": (),
        "trial_end": ("reason",),
        "submit": ("versionId", "length", "sha256"),
        "skip_task": ("reason",),
        "code_reset": ("code", "versionId"),
        "checkpoint": ("code", "versionId", "reason"),
        # Editing
        "edit": ("changes", "versionId", "isUndoing", "isRedoing", "isFlush"),
        "paste": ("length", "lines", "source", "offset"),
        "copy": ("length", "source", "cut"),
        "selection": ("offset", "length", "line", "column", "selections"),
        "editor_focus": (),
        "editor_blur": (),
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
CODE_KINDS = frozenset({"edit", "checkpoint", "code_reset"})
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
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _need(cond: bool, reason: str) -> None:
    if not cond:
        raise _Invalid(reason)


def _check_edit(data: dict[str, Any]) -> None:
    changes = data.get("changes")
    if not (isinstance(changes, list) and len(changes) <= MAX_CHANGES):
        raise _Invalid(f"edit.changes: not a list of at most {MAX_CHANGES} changes")
    for change in changes:
        _need(
            isinstance(change, dict)
            and _is_int(change.get("rangeOffset"))
            and _is_int(change.get("rangeLength"))
            and isinstance(change.get("text"), str),
            "edit.changes: each needs rangeOffset, rangeLength (integers >= 0) and text",
        )
    _need(_is_int(data.get("versionId", 0)), "edit.versionId: not an integer")


def _check_code(data: dict[str, Any]) -> None:
    _need(isinstance(data.get("code"), str), "code: not a string")


def _check_paste(data: dict[str, Any]) -> None:
    _need(_is_int(data.get("length")), "paste.length: not an integer >= 0")
    _need(data.get("source") in PASTE_SOURCES, f"paste.source: not one of {sorted(PASTE_SOURCES)}")


def _check_copy(data: dict[str, Any]) -> None:
    _need(data.get("source", "editor") in COPY_SOURCES, "copy.source: unknown")


def _check_duration(key: str) -> Callable[[dict[str, Any]], None]:
    def check(data: dict[str, Any]) -> None:
        _need(key not in data or _is_int(data[key]), f"{key}: not an integer >= 0")

    return check


def _check_visibility(data: dict[str, Any]) -> None:
    _need(data.get("state") in ("visible", "hidden"), "page_visibility.state: visible|hidden")
    _check_duration("hidden_ms")(data)


def _check_focus(data: dict[str, Any]) -> None:
    _need(isinstance(data.get("focused"), bool), "window_focus.focused: not a boolean")
    _check_duration("away_ms")(data)


def _check_idle(data: dict[str, Any]) -> None:
    _need(data.get("state") in ("start", "end"), "idle.state: start|end")
    _check_duration("idle_ms")(data)


_CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "edit": _check_edit,
    "checkpoint": _check_code,
    "code_reset": _check_code,
    "paste": _check_paste,
    "copy": _check_copy,
    "page_visibility": _check_visibility,
    "window_focus": _check_focus,
    "idle": _check_idle,
}


def _clean_event(raw: dict[str, Any]) -> tuple[int, str, dict[str, Any], int]:
    """(ts, kind, data, dropped keys) of a valid event, or ``_Invalid``."""
    ts = raw.get("ts")
    if isinstance(ts, float) and ts.is_integer():
        ts = int(ts)
    if not (_is_int(ts) and ts < MAX_TS):
        raise _Invalid("ts: not an integer number of ms")
    kind = raw.get("kind")
    if not (isinstance(kind, str) and kind in KINDS):
        raise _Invalid("unknown kind")
    data = raw.get("data", {})
    _need(isinstance(data, dict), "data: not an object")
    allowed = KINDS[kind]
    dropped = 0
    if not data.keys() <= allowed:
        kept = {k: v for k, v in data.items() if k in allowed}
        dropped, data = len(data) - len(kept), kept
    check = _CHECKS.get(kind)
    if check is not None:
        check(data)
    if data:
        cap = MAX_CODE_PAYLOAD_BYTES if kind in CODE_KINDS else MAX_PAYLOAD_BYTES
        size = len(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
        _need(size <= cap, f"data: {size} characters, over the {cap} limit for {kind}")
    return ts, kind, data, dropped


def parse_batch(raw_events: object) -> Batch:
    """Validate a batch's ``events`` list (see the module docstring for the policy)."""
    if not isinstance(raw_events, list):
        raise BatchError("bad_batch", '"events" must be a list of events')
    if len(raw_events) > MAX_BATCH_EVENTS:
        raise BatchError(
            "too_many_events", f"a batch holds at most {MAX_BATCH_EVENTS} events"
        )
    batch = Batch()
    seen: set[int] = set()
    for raw in raw_events:
        seq = raw.get("seq") if isinstance(raw, dict) else None
        if not (isinstance(raw, dict) and _is_int(seq, 1) and seq <= MAX_SEQ):
            raise BatchError("bad_seq", f"every event needs an integer seq in 1..{MAX_SEQ}")
        if seq in seen:
            batch.repeated += 1
            continue
        seen.add(seq)
        try:
            ts, kind, data, dropped = _clean_event(raw)
        except _Invalid as exc:
            reason = str(exc)
            raw_ts, raw_kind = raw.get("ts"), raw.get("kind")
            batch.rejected[seq] = reason
            batch.events.append(
                Event(
                    seq=seq,
                    ts=raw_ts if _is_int(raw_ts) and raw_ts < MAX_TS else 0,
                    kind=REJECTED_KIND,
                    data={"reason": reason, "kind": str(raw_kind)[:40]},
                )
            )
            continue
        batch.dropped_keys += dropped
        batch.events.append(Event(seq=seq, ts=ts, kind=kind, data=data))
    return batch
