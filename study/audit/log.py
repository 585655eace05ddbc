"""Append to the audit log and verify its hash chain.

``record()`` is the only way to write an :class:`~study.models.AuditEvent`. Call it inside the
transaction of the action it records: the event commits or rolls back with it. Appends are
serialised: on PostgreSQL by a transaction-level advisory lock (a ``SELECT ... FOR UPDATE`` on
the last row would let a waiting writer re-read the same last row after the lock is released
and collide on ``seq``, and locks nothing while the log is empty); on SQLite by the database
write lock that every transaction takes up front (``transaction_mode = IMMEDIATE``).
Record events at the end of a transaction so the chain lock is held briefly.

``verify_chain()`` walks the log in ``seq`` order and reports the first break: a missing
event, a ``prev_hash`` that does not match the previous event, or a row whose content no
longer matches its hash.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import connection, transaction
from django.utils import timezone

from study.models import AuditEvent, Study
from study.models.audit import GENESIS_HASH, canonical_json, plain_json

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser

    from study.models import User

    Actor = User | AnonymousUser | None

# Action names.
EXPORT = "export"
VAULT_READ = "vault_read"
EXCLUSION = "exclusion"
WITHDRAWAL = "withdrawal"
CONFIG_CHANGE = "config_change"
REPORT_RELEASE = "report_release"
PURGE = "purge"
CONSENT = "consent"
ASSIGNMENT = "assignment"
TRACK_OVERRIDE = "track_override"

# pg_advisory_xact_lock key of the chain ("AUDIT" in ASCII).
CHAIN_LOCK_KEY = 0x4155444954
NAME = re.compile(r"^[a-z][a-z0-9_.]{0,39}$")
MAX_TEXT = 200  # details hold identifiers, versions and hashes, not prose
MAX_DETAILS = 16_000


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    n: int  # events verified (all of them when ok; those before the break otherwise)
    first_bad_seq: int | None = None
    reason: str = ""
    head_hash: str = GENESIS_HASH


def actor_of(actor: Actor) -> tuple[str, str]:
    """(actor_type, actor_ref): staff by username, participants by their pseudonym."""
    if actor is None or not actor.is_authenticated:
        return AuditEvent.ActorType.SYSTEM, "system"
    kind = (
        AuditEvent.ActorType.STAFF
        if actor.is_staff or actor.is_superuser
        else AuditEvent.ActorType.PARTICIPANT
    )
    return kind, actor.get_username()


def _check_text(value: Any) -> None:
    if isinstance(value, str) and len(value) > MAX_TEXT:
        raise ValueError(
            f"Audit details hold identifiers and counts, not free text ({len(value)} characters); "
            "record a sha256 of long text instead."
        )
    if isinstance(value, list):
        for item in value:
            _check_text(item)
    if isinstance(value, dict):
        for item in value.values():
            _check_text(item)


def sha256_text(text: str) -> str:
    """Reference free text (a reason, a purpose) from an event without copying it."""
    return hashlib.sha256(text.encode()).hexdigest()


def _lock_chain() -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [CHAIN_LOCK_KEY])


_ROLLED_BACK: ContextVar[bool] = ContextVar("audit_rolled_back", default=False)


@contextmanager
def rolled_back() -> Iterator[None]:
    """For code whose writes are always rolled back (the assignment simulation): ``record``
    checks its event but writes nothing and takes no chain lock, so a simulation never makes
    real audit writes elsewhere on the platform wait for it."""
    token = _ROLLED_BACK.set(True)
    try:
        yield
    finally:
        _ROLLED_BACK.reset(token)


def record(
    action: str,
    *,
    actor: Actor,
    object_type: str,
    object_id: str | int,
    details: Mapping[str, Any] | None = None,
) -> AuditEvent:
    """Append one event to the chain and return it (unsaved inside ``rolled_back``)."""
    if not NAME.match(action) or not NAME.match(object_type):
        raise ValueError(f"Bad audit action or object type: {action!r}, {object_type!r}.")
    clean = plain_json(dict(details or {}))
    _check_text(clean)
    if len(canonical_json(clean)) > MAX_DETAILS:
        raise ValueError("Audit details are too large.")
    actor_type, actor_ref = actor_of(actor)
    if _ROLLED_BACK.get():
        return AuditEvent(
            ts=timezone.now(),
            actor_type=actor_type,
            actor_ref=actor_ref,
            action=action,
            object_type=object_type,
            object_id=str(object_id),
            details=clean,
        )
    with transaction.atomic():
        _lock_chain()
        last = AuditEvent.objects.order_by("-seq").values_list("seq", "hash").first()
        seq, prev_hash = (last[0] + 1, last[1]) if last else (1, GENESIS_HASH)
        event = AuditEvent(
            seq=seq,
            ts=timezone.now(),
            actor_type=actor_type,
            actor_ref=actor_ref[:150],
            action=action,
            object_type=object_type,
            object_id=str(object_id)[:64],
            details=clean,
            prev_hash=prev_hash,
        )
        event.hash = event.compute_hash()
        event.save()
    return event


def verify_chain() -> VerifyResult:
    expected, prev_hash, n = 1, GENESIS_HASH, 0
    for event in AuditEvent.objects.order_by("seq").iterator(chunk_size=2000):
        if event.seq != expected:
            reason = f"event {expected} is missing (the next stored event is {event.seq})"
            return VerifyResult(False, n, expected, reason, prev_hash)
        if event.prev_hash != prev_hash:
            reason = f"its prev_hash does not match the hash of event {expected - 1}"
            return VerifyResult(False, n, event.seq, reason, prev_hash)
        if event.compute_hash() != event.hash:
            reason = "its content does not match its hash (the row was changed)"
            return VerifyResult(False, n, event.seq, reason, prev_hash)
        prev_hash, expected, n = event.hash, expected + 1, n + 1
    return VerifyResult(True, n, None, "", prev_hash)


# --- Shortcuts for the audited actions ----------------------------------------------------
def record_config_change(study: Study, *, actor: Actor, change: str, **details: Any) -> AuditEvent:
    """A configuration change of ``study``: ``change`` is e.g. "saved", "status", "snapshot"."""
    return record(
        CONFIG_CHANGE,
        actor=actor,
        object_type="study",
        object_id=study.pk,
        details={"study": study.slug, "change": change, **details},
    )


def record_report_release(
    study: Study, policy: str, *, actor: Actor = None, **details: Any
) -> AuditEvent:
    """Score reports of ``study`` became visible to participants under ``policy`` (a
    ``Study.ReleasePolicy`` value). Extra ``details``: counts, e.g. ``n_reports=12``."""
    return record(
        REPORT_RELEASE,
        actor=actor,
        object_type="study",
        object_id=study.pk,
        details={"study": study.slug, "policy": str(policy), **details},
    )
