"""Closing a study and applying its retention schedule (privacy notes section 9).

``close_study`` records when a study closed (retention counts from there), audits the status
change and, under the "study_end" release policy, the release of the score reports.

``purge_expired`` deletes, for every closed study whose periods have passed, the vault contact
entries of its participants (``contact_days``) and, when ``telemetry_days`` is set, the editor
telemetry of its trials (through the ``telemetry_purge_requested`` signal, handled by
``ide_bridge``). Each study with something removed gets a ``purge`` audit event.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from django.db import transaction
from django.utils import timezone

from study.audit import log as audit
from study.models import Participant, RetentionPolicy, Study, Trial
from study.signals import removed_counts, telemetry_purge_requested
from study.vault.models import VaultEntry
from study.vault.services import delete_contact

if TYPE_CHECKING:
    from study.audit.log import Actor


def retention_of(study: Study) -> RetentionPolicy:
    policy, _ = RetentionPolicy.objects.get_or_create(study=study)
    return policy


@transaction.atomic
def close_study(study: Study, *, actor: Actor = None, now: datetime | None = None) -> bool:
    """Close ``study`` (idempotent). Returns False if it was already closed."""
    study = Study.objects.select_for_update().get(pk=study.pk)
    if study.status == Study.Status.CLOSED:
        return False
    now = now or timezone.now()
    status_before, study.status = study.status, Study.Status.CLOSED
    study.save(update_fields=["status"])
    policy = retention_of(study)
    policy.closed_at = now
    policy.save(update_fields=["closed_at"])
    audit.record_config_change(
        study, actor=actor, change="status", status=study.status, status_before=status_before
    )
    if study.report_release == Study.ReleasePolicy.STUDY_END:
        audit.record_report_release(study, study.report_release, actor=actor)
    return True


@transaction.atomic
def record_retention_change(
    policy: RetentionPolicy, *, actor: Actor, fields: Sequence[str]
) -> None:
    """Audit a researcher's change of a study's retention periods (names, never values)."""
    if fields:
        audit.record_config_change(
            policy.study, actor=actor, change="retention", fields=sorted(fields)
        )


@dataclass
class StudyPurge:
    study: str
    removed: dict[str, int] = field(default_factory=dict)


@dataclass
class PurgeSummary:
    purged: list[StudyPurge] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def total(self) -> dict[str, int]:
        totals: dict[str, int] = {}
        for item in self.purged:
            for kind, count in item.removed.items():
                totals[kind] = totals.get(kind, 0) + count
        return totals


def purge_expired(*, now: datetime | None = None, dry_run: bool = False) -> PurgeSummary:
    """Apply every closed study's retention policy. With ``dry_run`` only count."""
    now = now or timezone.now()
    summary = PurgeSummary()
    for study in Study.objects.filter(status=Study.Status.CLOSED).order_by("slug"):
        policy = RetentionPolicy.objects.filter(study=study).first()
        if policy is None or policy.closed_at is None:
            summary.warnings.append(
                f"{study.slug} is closed but its closing time is unknown; set closed_at in its "
                "retention policy to start the retention periods."
            )
            continue
        removed = purge_study(study, policy, now=now, dry_run=dry_run)
        if removed:
            summary.purged.append(StudyPurge(study.slug, removed))
    return summary


@transaction.atomic
def purge_study(
    study: Study, policy: RetentionPolicy, *, now: datetime, dry_run: bool
) -> dict[str, int]:

    removed: dict[str, int] = {}
    if policy.contact_due(now):
        ids = list(Participant.objects.filter(study=study).values_list("internal_id", flat=True))
        if dry_run:
            removed["vault_entries"] = VaultEntry.objects.filter(internal_id__in=ids).count()
        else:
            removed["vault_entries"] = sum(delete_contact(internal_id) for internal_id in ids)
    cutoff = policy.telemetry_cutoff()
    if cutoff is not None and now >= cutoff:
        trial_ids = list(
            Trial.objects.filter(participant__study=study)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        responses = telemetry_purge_requested.send(
            sender=Study, study_id=study.pk, trial_ids=trial_ids, before=cutoff, dry_run=dry_run
        )
        removed.update(removed_counts(responses))
    removed = {kind: count for kind, count in removed.items() if count}
    if removed and not dry_run:
        audit.record(
            audit.PURGE,
            actor=None,
            object_type="study",
            object_id=study.pk,
            details={
                "study": study.slug,
                "removed": removed,
                "closed_at": policy.closed_at.isoformat() if policy.closed_at else None,
                "contact_days": policy.contact_days,
                "telemetry_days": policy.telemetry_days,
            },
        )
    return removed
