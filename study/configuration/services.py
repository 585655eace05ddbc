"""Write operations of a study's configuration: what follows an admin save, and opening
recruitment. (Closing a study belongs to its retention schedule: ``audit.retention``.)"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from study.assignment.services import AssignmentError
from study.assignment.simulation import expected_imbalance, simulate, study_design
from study.audit import log as audit
from study.configuration.snapshots import current_snapshot
from study.configuration.validation import configuration_problems, cross_track_warnings
from study.models import Study, User


@dataclass(frozen=True)
class SavedStudy:
    """What the researcher should be told after saving a study."""

    problems: list[str] = field(default_factory=list)  # why it went back to draft
    back_to_draft: bool = False
    new_version: int | None = None  # a new configuration snapshot for new participants


@transaction.atomic
def record_study_saved(
    study: Study,
    *,
    actor: audit.Actor,
    created: bool,
    fields: Sequence[str],
    inlines: Sequence[str],
    status_before: str | None = None,
) -> SavedStudy:
    """After the admin saved ``study`` (its fields and inlines): a study that may not recruit
    goes back to draft, a study with participants gets a new configuration version when its
    configuration changed, and one ``config_change`` audit event names what changed (field and
    inline names, never their values). A researcher who creates a study is on it."""
    if created and isinstance(actor, User) and not actor.is_superuser:
        study.researchers.add(actor)
    problems: list[str] = []
    if study.status == Study.Status.RECRUITING:
        problems = configuration_problems(study)
        if problems:
            study.status = Study.Status.DRAFT
            study.save(update_fields=["status"])
    new_version: int | None = None
    if study.participants.exists():
        snapshot = current_snapshot(study)
        if study.config_version != snapshot.version:
            new_version = study.config_version = snapshot.version
            study.save(update_fields=["config_version"])
    if created or fields or inlines or new_version is not None:
        details: dict[str, Any] = {
            "fields": sorted(fields),
            "inlines": sorted(inlines),
            "status": study.status,
        }
        if not created and "status" in fields:
            details["status_before"] = status_before
        if new_version is not None:
            details["snapshot_version"] = new_version
        audit.record_config_change(
            study, actor=actor, change="created" if created else "saved", **details
        )
    return SavedStudy(problems=problems, back_to_draft=bool(problems), new_version=new_version)


class CannotOpen(Exception):
    """The study's configuration is not ready for participants (message lists why)."""


def open_recruitment(study: Study, *, actor: audit.Actor) -> list[str]:
    """Let participants join ``study`` (checks the configuration first; idempotent). Returns
    the design check's warnings: cross-track pool entries and the imbalance a simulated
    allocation of the study's target, with its expected dropout, reaches
    (``study.assignment.simulation``). The audit event of the opening counts them and keeps
    their sha256 (audit details hold identifiers, not prose)."""
    if problems := configuration_problems(study):
        raise CannotOpen(" ".join(problems))
    # Before the lock: the simulation takes seconds and rolls back everything it writes.
    warnings = cross_track_warnings(study) + design_check(study)
    with transaction.atomic():
        study = Study.objects.select_for_update().get(pk=study.pk)
        if problems := configuration_problems(study):  # changed in the meantime
            raise CannotOpen(" ".join(problems))
        if study.status != Study.Status.RECRUITING:
            status_before, study.status = study.status, Study.Status.RECRUITING
            study.save(update_fields=["status"])
            audit.record_config_change(
                study,
                actor=actor,
                change="status",
                status=study.status,
                status_before=status_before,
                n_warnings=len(warnings),
                warnings_sha256=audit.sha256_text("\n".join(warnings)),
            )
    return warnings


DESIGN_CHECK_SEED = 1  # the check is reproducible: the same design gives the same warnings


def design_check(study: Study) -> list[str]:
    """The expected imbalance of ``study``'s design, as warnings."""
    try:
        summary = simulate(
            study_design(study), dropout=study.expected_dropout, seed=DESIGN_CHECK_SEED
        )
    except AssignmentError as exc:
        return [f"The allocation could not be simulated: {exc}"]
    return expected_imbalance(summary)
