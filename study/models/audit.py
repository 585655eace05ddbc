"""The audit log: append-only and hash-chained.

Each event stores the hash of the event before it (``prev_hash``) and its own
``hash = sha256(prev_hash + canonical_json(fields))``, where ``fields`` are ``seq``, ``ts``
(UTC, microseconds, ``...Z``), ``actor_type``, ``actor_ref``, ``action``, ``object_type``,
``object_id`` and ``details``, serialised with sorted keys, no spaces, UTF-8 and integral floats
written as integers. Anyone holding a CSV export can recompute the chain.

Changing or deleting an event is refused here (``save()`` of an existing row, ``delete()``, and
queryset ``update()``/``delete()``) and, on PostgreSQL, by a trigger (migration 0004). Write
events only through :func:`study.audit.log.record`.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import UTC, datetime
from typing import Any

from django.db import models

GENESIS_HASH = "0" * 64


class AuditImmutableError(Exception):
    """Audit events are never changed or deleted."""


def plain_json(value: Any) -> Any:
    """``value`` as plain JSON types, with integral floats as ints (so a value reads back from
    PostgreSQL ``jsonb`` and SQLite with the same canonical form). Raises ``TypeError`` for
    anything else, ``ValueError`` for NaN and infinities."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("audit details cannot hold NaN or infinity")
        return int(value) if value.is_integer() else value
    if isinstance(value, list | tuple):
        return [plain_json(item) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise TypeError("audit details need string keys")
        return {key: plain_json(item) for key, item in value.items()}
    raise TypeError(f"audit details hold plain JSON values, not {type(value).__name__}")


def canonical_json(value: Any) -> str:
    return json.dumps(
        plain_json(value),
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
    )


def canonical_ts(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class AuditEventQuerySet(models.QuerySet["AuditEvent"]):
    def update(self, **kwargs: Any) -> int:
        raise AuditImmutableError("Audit events cannot be changed.")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AuditImmutableError("Audit events cannot be deleted.")


class AuditEvent(models.Model):
    """One audited action. ``details`` hold ids, counts, versions and hashes: no PII and no
    free text (free text, such as an exclusion reason, is referenced by its sha256)."""

    class ActorType(models.TextChoices):
        PARTICIPANT = "participant"
        STAFF = "staff"
        SYSTEM = "system"

    seq = models.PositiveBigIntegerField(help_text="Position in the chain, from 1, no gaps.")
    ts = models.DateTimeField()
    actor_type = models.CharField(max_length=12, choices=ActorType.choices)
    actor_ref = models.CharField(
        max_length=150, help_text='Pseudonymous username of the actor, or "system".'
    )
    action = models.CharField(max_length=40)
    object_type = models.CharField(max_length=40)
    object_id = models.CharField(max_length=64, blank=True)
    details = models.JSONField(default=dict, blank=True)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        constraints = [
            # One event per position: two writers can never both append seq N.
            models.UniqueConstraint(fields=["seq"], name="uniq_audit_seq"),
        ]
        indexes = [
            # The admin filters by action over time; the IRB asks "what happened to X".
            models.Index(fields=["action", "ts"], name="audit_action_ts"),
            models.Index(fields=["object_type", "object_id"], name="audit_object"),
        ]
        ordering = ["seq"]

    def __str__(self) -> str:
        return f"#{self.seq} {self.action} {self.object_type}:{self.object_id} by {self.actor_ref}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AuditImmutableError("Audit events cannot be changed.")
        kwargs["force_insert"] = True  # never an UPDATE, even with a primary key set
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AuditImmutableError("Audit events cannot be deleted.")

    def hashed_fields(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "ts": canonical_ts(self.ts),
            "actor_type": self.actor_type,
            "actor_ref": self.actor_ref,
            "action": self.action,
            "object_type": self.object_type,
            "object_id": self.object_id,
            "details": self.details,
        }

    def compute_hash(self) -> str:
        payload = self.prev_hash + canonical_json(self.hashed_fields())
        return hashlib.sha256(payload.encode()).hexdigest()
