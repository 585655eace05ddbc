"""Signals for the apps above ``study`` (``ide_bridge`` subscribes; ``study`` never imports it).

``participant_data_deleted``: sender=``Participant`` class, ``participant_id: int``,
``trial_ids: list[int]``. Sent when a withdrawal under the "delete" policy removes a
participant's research data. Receivers delete what they keep for those trials (telemetry
events, AI requests, uploads, ...) and return ``{kind: count}`` of what they removed.

``telemetry_purge_requested``: sender=``Study`` class, ``study_id: int``, ``trial_ids:
list[int]``, ``before: datetime``, ``dry_run: bool``. Sent by ``manage.py purge_expired`` once a
closed study's ``RetentionPolicy.telemetry_days`` have passed. Receivers delete (or, with
``dry_run``, only count) the telemetry of those trials stored before ``before`` and return
``{kind: count}``.

Both are sent synchronously inside the caller's transaction, so a receiver's deletions commit
or roll back with the withdrawal or purge; a receiver that starts tasks must use
``transaction.on_commit``. An exception in a receiver aborts the whole operation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.dispatch import Signal

participant_data_deleted = Signal()
telemetry_purge_requested = Signal()


def removed_counts(responses: Iterable[tuple[Any, Any]]) -> dict[str, int]:
    """Sum the ``{kind: count}`` mappings the receivers returned (other returns are ignored)."""
    totals: dict[str, int] = {}
    for _receiver, result in responses:
        if isinstance(result, Mapping):
            for kind, count in result.items():
                totals[str(kind)] = totals.get(str(kind), 0) + int(count)
    return totals
