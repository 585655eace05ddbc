"""Template validation (the paper's section 4.1 and appendix B): one-attempt C0 pass rates per
model, and the status they give a template version.

- Fidelity: the baseline model may pass at most ``BASELINE_THRESHOLD`` (0.05, one of 20) of a
  template's instances.
- Generalisation: every other model may pass at most ``GENERALISATION_THRESHOLD`` (0.10, one of
  10).

A version is *unvalidated* until it has a baseline validation and at least one other model's
(and every model the caller requires); *rejected* as soon as a validation before acceptance is
over its threshold; *accepted* when the baseline and every model so far are within; and
*compromised* when, after acceptance, a model that was not part of it passes more than its
threshold (a newer model learned to solve it). Rejected and compromised are final for that
version: a revised template is a new version and starts again.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from django.db import transaction

from evaluation.models import ModelEndpoint, Sweep, TaskTemplate, TemplateStatus, TemplateValidation

BASELINE_THRESHOLD = 0.05
GENERALISATION_THRESHOLD = 0.10
FIDELITY_INSTANCES = 20
GENERALISATION_INSTANCES = 10

Role = TemplateValidation.Role
Status = TemplateStatus.Status
FINAL = {Status.REJECTED, Status.COMPROMISED}


def threshold_for(role: str) -> float:
    return BASELINE_THRESHOLD if role == Role.BASELINE else GENERALISATION_THRESHOLD


def validations_of(slug: str, version: str) -> list[TemplateValidation]:
    """Every validation of a template version, oldest first."""
    return list(
        TemplateValidation.objects.filter(template__slug=slug, template__version=version)
        .select_related("endpoint", "template")
        .order_by("created_at", "pk")
    )


def _model(validation: TemplateValidation) -> tuple[str, str]:
    """The model a validation asked, as frozen when it ran (an endpoint row can be pointed at
    a newer model later: that is a new model)."""
    settings = validation.endpoint_settings or {}
    if not settings.get("model"):  # recorded without its settings: the endpoint row it used
        return f"endpoint {validation.endpoint_id}", ""
    return str(settings.get("base_url", "")), str(settings["model"])


def describe(validation: TemplateValidation) -> str:
    """``baseline model-a passed 1/20 (0.05, threshold 0.05)``."""
    who = "baseline" if validation.role == Role.BASELINE else "model"
    return (
        f"{who} {validation.endpoint.name} passed {validation.passed}/{validation.instances} "
        f"({validation.rate:.2f}, threshold {validation.threshold:.2f})"
    )


@transaction.atomic
def record_validation(
    *,
    template: TaskTemplate,
    endpoint: ModelEndpoint,
    endpoint_settings: dict[str, Any],
    role: str,
    sweep: Sweep,
    instances: int,
    passed: int,
) -> TemplateValidation:
    """Store one model's result on one template; running the same sweep again updates its
    row (so a resumed validation keeps its creation time, and counts as the same run)."""
    validation, _ = TemplateValidation.objects.update_or_create(
        template=template,
        sweep=sweep,
        role=role,  # one sweep may serve as a baseline run and as another model's
        defaults={
            "endpoint": endpoint,
            "endpoint_settings": endpoint_settings,
            "instances": instances,
            "passed": passed,
            "threshold": threshold_for(role),
        },
    )
    return validation


def _verdict(
    validations: Sequence[TemplateValidation],
    current: TemplateStatus,
    required: set[str],
) -> tuple[str, str, TemplateValidation | None]:
    """(status, reason, deciding validation) from the validations and the stored status."""
    if current.status in FINAL and current.decided_by is not None:
        return current.status, current.reason, current.decided_by
    if current.status == Status.ACCEPTED and current.decided_by:
        accepted_by = current.decided_by
        order = [v.pk for v in validations]
        cut = order.index(accepted_by.pk) + 1 if accepted_by.pk in order else len(order)
        known = {_model(v) for v in validations[:cut]}
        for later in validations[cut:]:
            if _model(later) in known or later.within:
                continue
            return (
                Status.COMPROMISED,
                f"Accepted, then a later model solved too many: {describe(later)}.",
                later,
            )
        return Status.ACCEPTED, current.reason, accepted_by
    for validation in validations:
        if not validation.within:
            return Status.REJECTED, f"Too easy: {describe(validation)}.", validation
    baselines = [v for v in validations if v.role == Role.BASELINE]
    others = [v for v in validations if v.role == Role.GENERALISATION]
    missing = sorted(required - {v.endpoint.name for v in validations})
    if not baselines:
        return Status.UNVALIDATED, "No fidelity run of the baseline model yet.", None
    if not others or missing:
        waiting = ", ".join(missing) if missing else "at least one other model"
        return Status.UNVALIDATED, f"Waiting for the generalisation runs of {waiting}.", None
    last = validations[-1]
    reason = "Within every threshold: " + "; ".join(describe(v) for v in validations) + "."
    return Status.ACCEPTED, reason, last


@transaction.atomic
def decide_status(slug: str, version: str, *, models: Iterable[str] = ()) -> TemplateStatus:
    """Work out and store the status of template ``slug`` at ``version`` from its validations.

    ``models`` names endpoints whose generalisation runs acceptance waits for (the command
    passes its ``--models``). Deciding again without new validations changes nothing."""
    TemplateStatus.objects.get_or_create(
        slug=slug, version=version, defaults={"status": Status.UNVALIDATED}
    )
    current = (
        TemplateStatus.objects.select_for_update(of=("self",))
        .select_related("decided_by__endpoint")
        .get(slug=slug, version=version)
    )
    status, reason, decided_by = _verdict(validations_of(slug, version), current, set(models))
    if (current.status, current.reason, current.decided_by_id) != (
        status,
        reason,
        decided_by.pk if decided_by else None,
    ):
        current.status, current.reason, current.decided_by = status, reason, decided_by
        current.save(update_fields=["status", "reason", "decided_by", "updated_at"])
    return current


def template_status(slug: str, version: str) -> str:
    """The stored status of a template version ("unvalidated" when it was never decided)."""
    row = TemplateStatus.objects.filter(slug=slug, version=version).values("status").first()
    return row["status"] if row else Status.UNVALIDATED


def statuses(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The status of each (slug, version) in one query ("unvalidated" for those never decided)."""
    wanted = set(pairs)
    found = {
        (row.slug, row.version): row.status
        for row in TemplateStatus.objects.filter(slug__in={slug for slug, _ in wanted})
        if (row.slug, row.version) in wanted
    }
    return {pair: found.get(pair, Status.UNVALIDATED) for pair in wanted}
