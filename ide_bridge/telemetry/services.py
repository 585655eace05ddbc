"""Telemetry services: idempotent ingestion, the acknowledged prefix, integrity flags and the
per-trial bearer tokens of non-browser clients.

The WebSocket consumer and the HTTP endpoint both call :func:`ingest`; neither writes events
itself. The wire format and the validation policy are in :mod:`ide_bridge.telemetry.protocol`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from django.core import signing
from django.db import transaction
from django.utils import timezone

from evaluation.instances import get_instance
from ide_bridge.models import IntegrityFlag, TrialAccess, TrialEvent
from ide_bridge.telemetry.protocol import (
    AI_REQUEST_KINDS,
    CATEGORIES,
    Batch,
    BatchError,
    Event,
    parse_batch,
)
from ide_bridge.telemetry.store import (
    highest_contiguous_many,
    highest_contiguous_seq,
    insert_absent,
    participants_gone,
)
from study.models import Trial
from study.trials.services import arm_config

__all__ = [
    "Ack",
    "accepts_events",
    "highest_contiguous_seq",
    "ingest",
    "ingest_many",
    "issue_trial_token",
    "page_token",
    "replay_data",
    "token_opens",
]

# --- Integrity thresholds (documented for researchers on the flags page) --------------------
# A paste from outside the page (not copied in the editor or the AI panel) longer than this
# many characters is flagged.
LARGE_PASTE_CHARS = 200
# Time away from the page (tab hidden or window unfocused) longer than this is flagged. The
# client measures it and reports it on return (``hidden_ms`` / ``away_ms``).
LONG_BLUR_MS = 60_000
# A hidden tab and an unfocused window that end within this many ms are one absence, one flag.
SAME_ABSENCE_MS = 5_000
# After a trial closes (submitted, expired, or past its deadline) its last buffered events may
# still arrive (reconnect, pagehide beacon) for this long.
CLOSED_GRACE = timedelta(minutes=10)
# Salt of the workspace page's signed token (``page_token``).
PAGE_TOKEN_SALT = "ide_bridge.telemetry.page-token"  # noqa: S105 - a salt, not a secret
# How many error reasons an ack lists.
MAX_ACK_ERRORS = 10


@dataclass(frozen=True)
class Ack:
    highest_contiguous_seq: int
    stored: int
    duplicates: int
    rejected: int
    dropped_keys: int = 0
    last: int | None = None  # highest seq of the acknowledged batch
    errors: list[dict[str, Any]] = field(default_factory=list)

    def as_message(self) -> dict[str, Any]:
        return {
            "type": "ack",
            "seq": self.highest_contiguous_seq,
            "last": self.last,
            "stored": self.stored,
            "duplicates": self.duplicates,
            "rejected": self.rejected,
            "dropped_keys": self.dropped_keys,
            "errors": self.errors,
        }


# --- Which trials accept events -------------------------------------------------------------
def accepts_events_until(trial: Trial) -> datetime | None:
    """The moment after which the trial no longer accepts telemetry (None: not started)."""
    if trial.status == Trial.Status.PENDING or trial.started_at is None:
        return None
    if trial.status == Trial.Status.ACTIVE:
        end = trial.deadline
    else:
        end = trial.ended_at or trial.deadline
    return (end or timezone.now()) + CLOSED_GRACE


def accepts_events(trial: Trial, now: datetime) -> bool:
    until = accepts_events_until(trial)
    return until is not None and now <= until


# --- Ingestion ------------------------------------------------------------------------------
Job = tuple[Trial, object, int]  # (trial, raw ``events`` of a batch message, known floor)


def ingest(trial: Trial, events: object, *, floor: int = 0) -> Ack:
    """Store a batch idempotently and acknowledge the contiguous prefix.

    ``events`` is the raw ``events`` list of a batch message (validated here; a broken envelope
    raises :class:`ide_bridge.telemetry.protocol.BatchError` and stores nothing). ``floor`` is a seq
    the caller knows is contiguous (the consumer's last ack): events at or below it are duplicates
    without asking the database. Re-sent events are duplicates, never second rows (the (trial, seq)
    unique constraint); integrity flags come only from newly stored events.
    """
    result = ingest_many([(trial, events, floor)])[0]
    if isinstance(result, BatchError):
        raise result
    return result


def ingest_many(jobs: list[Job]) -> list[Ack | BatchError]:
    """:func:`ingest` for several batches (of any trials) in one transaction and three
    statements: the WebSocket consumer's group commit. Results are in the order of ``jobs``.
    When one trial appears twice, an event new to both counts as stored for the first. Trials
    of participants who withdrew or were excluded get ``BatchError("trial_closed")``."""
    results: list[Ack | BatchError] = []
    parsed: list[tuple[int, Trial, Batch, int]] = []
    for index, (trial, events, floor) in enumerate(jobs):
        try:
            parsed.append((index, trial, parse_batch(events), floor))
        except BatchError as exc:
            results.append(exc)
            continue
        results.append(Ack(floor, 0, 0, 0))  # placeholder, replaced below
    with transaction.atomic():
        gone = participants_gone({trial.participant_id for _, trial, _, _ in parsed})
        for index, trial, _, _ in parsed:
            if trial.participant_id in gone:
                results[index] = BatchError("trial_closed", "this participation has ended")
        parsed = [job for job in parsed if job[1].participant_id not in gone]
        owner: dict[tuple[int, int], int] = {}
        rows: list[list[Any]] = []
        floors: dict[int, int] = {}
        for index, trial, batch, floor in parsed:
            floors[trial.pk] = min(floor, floors.get(trial.pk, floor))
            for e in batch.events:
                if e.seq > floor and (trial.pk, e.seq) not in owner:
                    owner[(trial.pk, e.seq)] = index
                    rows.append([trial.pk, e.seq, e.ts, e.kind, e.data])
        inserted = insert_absent(rows, timezone.now())
        new_by_job: dict[int, list[Event]] = {}
        flags: list[IntegrityFlag] = []
        for index, trial, batch, _ in parsed:
            new = [e for e in batch.events if owner.get((trial.pk, e.seq)) == index]
            new = [e for e in new if (trial.pk, e.seq) in inserted]
            new_by_job[index] = new
            flags += detect_flags(trial, [e for e in new if e.seq not in batch.rejected])
        if flags:
            IntegrityFlag.objects.bulk_create(flags)
        highest = highest_contiguous_many(floors) if floors else {}
    for index, trial, batch, _ in parsed:
        new = new_by_job[index]
        new_rejected = sum(1 for e in new if e.seq in batch.rejected)
        errors = [{"seq": s, "reason": r} for s, r in sorted(batch.rejected.items())]
        results[index] = Ack(
            highest_contiguous_seq=highest[trial.pk],
            stored=len(new) - new_rejected,
            duplicates=len(batch.events) - len(new) + batch.repeated,
            rejected=new_rejected,
            dropped_keys=batch.dropped_keys,
            last=batch.last,
            errors=errors[:MAX_ACK_ERRORS],
        )
    return results


# --- Integrity flags ------------------------------------------------------------------------
def _arm_without_ai(trial: Trial) -> bool:
    return str(arm_config(trial).get("ai_mode", "")) == "none"


def detect_flags(trial: Trial, events: list[Event]) -> list[IntegrityFlag]:
    """Unsaved flags raised by newly stored events (thresholds: module constants above)."""
    flags: list[IntegrityFlag] = []
    absences: list[tuple[int, int]] = []  # (returned at ts, seq) of long absences
    no_ai: bool | None = None
    for e in events:
        data = e.data
        if e.kind == "paste" and data.get("source") == "outside":
            if int(data.get("length", 0)) > LARGE_PASTE_CHARS:
                detail = {"length": data["length"], "lines": data.get("lines"), "ts": e.ts}
                flags.append(_flag(trial, IntegrityFlag.Kind.LARGE_PASTE, e, detail))
        elif e.kind in ("page_visibility", "window_focus"):
            away = data.get("hidden_ms") if e.kind == "page_visibility" else data.get("away_ms")
            returned = data.get("state") == "visible" or data.get("focused") is True
            if returned and isinstance(away, int) and away > LONG_BLUR_MS:
                if _same_absence(trial, absences, e.ts):
                    continue
                absences.append((e.ts, e.seq))
                detail = {"away_ms": away, "returned_ts": e.ts, "via": e.kind}
                flags.append(_flag(trial, IntegrityFlag.Kind.LONG_BLUR, e, detail))
        elif e.kind in AI_REQUEST_KINDS or (e.kind == "ai_state" and _ai_on(data)):
            if no_ai is None:
                no_ai = _arm_without_ai(trial)
            if no_ai:
                detail = {"event": e.kind, "request_id": data.get("request_id"), "ts": e.ts}
                flags.append(_flag(trial, IntegrityFlag.Kind.AI_ATTEMPT, e, detail))
    return flags


def _ai_on(data: dict[str, Any]) -> bool:
    return data.get("enabled") is True or data.get("copilot") is True


def _flag(trial: Trial, kind: str, event: Event, detail: dict[str, Any]) -> IntegrityFlag:
    return IntegrityFlag(trial=trial, kind=kind, event_seq=event.seq, detail=detail)


def _same_absence(trial: Trial, absences: list[tuple[int, int]], ts: int) -> bool:
    """A hidden tab and a blurred window report the same absence: flag it once."""
    if any(abs(ts - other) <= SAME_ABSENCE_MS for other, _ in absences):
        return True
    previous = (
        IntegrityFlag.objects.filter(trial=trial, kind=IntegrityFlag.Kind.LONG_BLUR)
        .order_by("-pk")
        .values_list("detail", flat=True)
        .first()
    )
    returned = previous.get("returned_ts") if isinstance(previous, dict) else None
    return isinstance(returned, int) and abs(returned - ts) <= SAME_ABSENCE_MS


# --- Per-trial bearer tokens ----------------------------------------------------------------
def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@transaction.atomic
def issue_trial_token(trial: Trial) -> str:
    """A new bearer token for the trial, returned in plain text this once; only its sha256 is
    stored. Issuing again replaces (revokes) the previous token."""
    token = secrets.token_urlsafe(32)
    TrialAccess.objects.update_or_create(trial=trial, defaults={"token_sha256": _digest(token)})
    return token


def page_token(trial: Trial) -> str:
    """The workspace page's token for the trial (its pagehide beacon cannot send cookies).
    Derived from the trial id with the site's signing key, so rendering the page stores
    nothing and every tab of the trial gets the same token."""
    return signing.Signer(salt=PAGE_TOKEN_SALT).sign(f"trial:{trial.pk}")


def token_opens(trial: Trial, token: str) -> bool:
    """Whether ``token`` opens ``trial``: its page token, or the issued bearer token."""
    try:
        if signing.Signer(salt=PAGE_TOKEN_SALT).unsign(token) == f"trial:{trial.pk}":
            return True
    except signing.BadSignature:
        pass
    stored = TrialAccess.objects.filter(trial_id=trial.pk).values_list("token_sha256", flat=True)
    digest = stored.first()
    return digest is not None and hmac.compare_digest(digest, _digest(token))


@lru_cache(maxsize=32)
def _starter_files(slug: str, seed: int) -> dict[str, str]:
    """Instantiating a task takes seconds; the result is fixed for (template, seed)."""
    return get_instance(slug, seed).starter_files()


# --- Replay ---------------------------------------------------------------------------------
def replay_data(trial: Trial) -> dict[str, Any]:
    """Everything the replay page needs: the starter text of every editable file, the last
    autosaved files, and the events in seq order, each with
    ``t_ms`` since the trial started. Client clocks drift, so client times are moved onto the
    server clock by the smallest observed (server receipt - client ts), i.e. by the event that
    reached the server fastest; ``t_ms`` never decreases along seq (a client clock stepping back
    shows as a pause, nothing is before 0; a rejected event without a valid ts takes its
    predecessor's time)."""
    rows = list(
        TrialEvent.objects.filter(trial_id=trial.pk)
        .order_by("seq")
        .values_list("seq", "client_ts", "server_ts", "kind", "payload")
    )
    offset = min(
        (int(srv.timestamp() * 1000) - ts for _, ts, srv, _, _ in rows if ts > 0), default=0
    )
    started = trial.started_at or (rows[0][2] if rows else timezone.now())
    start_ms = int(started.timestamp() * 1000)
    starter = dict(_starter_files(trial.template_slug, trial.seed))
    events, t_ms = [], 0
    for seq, ts, _, kind, payload in rows:
        if ts > 0:
            t_ms = max(t_ms, ts + offset - start_ms)
        events.append({"seq": seq, "t_ms": t_ms, "kind": kind, "data": payload})
    return {
        "trial": trial.pk,
        "started_at": started.isoformat(),
        "ended_at": trial.ended_at.isoformat() if trial.ended_at else None,
        # Edit, checkpoint and selection events name their file ("file"); events without one
        # (recorded before multi-file workspaces) are about the first editable file.
        "starter_files": starter,
        "final_files": {**starter, **(trial.draft_files or {})},
        "default_file": next(iter(starter), ""),
        "clock_offset_ms": offset,
        "categories": CATEGORIES,
        "events": events,
    }
