"""The audit log as CSV for an IRB auditor, with the hashes needed to re-verify it offline.
Every export is itself an audit event."""

from __future__ import annotations

import csv
import hashlib
import io

from django.db import transaction
from django.db.models import QuerySet

from study.audit import log as audit
from study.models import AuditEvent
from study.models.audit import canonical_json, canonical_ts

CSV_COLUMNS = (
    "seq",
    "ts",
    "actor_type",
    "actor_ref",
    "action",
    "object_type",
    "object_id",
    "details",
    "prev_hash",
    "hash",
)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: str) -> str:
    """Keep spreadsheet programs from running a cell as a formula."""
    return f"'{value}" if value.startswith(FORMULA_START) else value


def audit_csv(events: QuerySet[AuditEvent]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(CSV_COLUMNS)
    for event in events.order_by("seq").iterator(chunk_size=2000):
        writer.writerow(
            [
                event.seq,
                canonical_ts(event.ts),
                event.actor_type,
                _cell(event.actor_ref),
                event.action,
                event.object_type,
                _cell(event.object_id),
                canonical_json(event.details),
                event.prev_hash,
                event.hash,
            ]
        )
    return out.getvalue()


@transaction.atomic
def export_audit_log(events: QuerySet[AuditEvent], *, actor: audit.Actor, scope: str) -> str:
    """The CSV of ``events`` (``scope``: "all" or "selected"), recorded as an export."""
    rows = events.count()
    body = audit_csv(events)
    audit.record(
        audit.EXPORT,
        actor=actor,
        object_type="audit_log",
        object_id=scope,
        details={
            "profile": "audit_log_csv",
            "rows": rows,
            "sha256": hashlib.sha256(body.encode()).hexdigest(),
        },
    )
    return body
