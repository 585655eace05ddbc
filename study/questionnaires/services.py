"""Write operations of questionnaires: store a participant's answers (screening, after each
trial, after the study) and publish or copy a version in the builder."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from study.journey.services import advance_session, complete_participation, lock_participant
from study.models import Answer, Item, Participant, QuestionnaireVersion, Response, Trial
from study.questionnaires.builder import version_problems
from study.questionnaires.forms import is_empty, json_value, visible_keys


@transaction.atomic
def save_response(
    participant: Participant,
    version: QuestionnaireVersion,
    cleaned_data: Mapping[str, Any],
    trial: Trial | None = None,
) -> Response:
    """Store the answers once; a repeated submission returns the first response unchanged.

    Only visible items' non-empty answers are stored (visibility is re-evaluated here, so
    callers such as bots may pass plain dicts keyed by item key; unknown keys are ignored).
    """
    if trial is not None and trial.participant_id != participant.pk:
        raise ValueError("The trial belongs to another participant.")
    # Serialise one participant's submissions (a no-op on SQLite, which locks the database).
    Participant.objects.select_for_update().filter(pk=participant.pk).exists()
    lookup = {"participant": participant, "version": version, "trial": trial}
    existing = Response.objects.filter(**lookup).first()
    if existing is not None:
        return existing
    try:
        with transaction.atomic():
            response = Response.objects.create(**lookup, submitted_at=timezone.now())
    except IntegrityError:  # a concurrent submission won the race
        return Response.objects.get(**lookup)
    items = list(version.items.all())
    shown = visible_keys(items, cleaned_data)
    Answer.objects.bulk_create(
        Answer(response=response, item=item, value=json_value(cleaned_data[item.key]))
        for item in items
        if item.key in shown and not is_empty(cleaned_data.get(item.key))
    )
    return response


@transaction.atomic
def submit_post_trial(
    participant: Participant, trial: Trial, cleaned: Mapping[str, Any]
) -> Response:
    """The questionnaire after a trial; the session moves on once its last one is in."""
    version = participant.study.post_trial
    assert version is not None, "the study has no post-trial questionnaire"
    response = save_response(participant, version, cleaned, trial=trial)
    advance_session(participant, timezone.now())
    return response


@transaction.atomic
def submit_post_study(participant: Participant, cleaned: Mapping[str, Any]) -> Response:
    """The questionnaire at the end of the study; it completes the participation."""
    participant = lock_participant(participant)
    version = participant.study.post_study
    assert version is not None, "the study has no post-study questionnaire"
    response = save_response(participant, version, cleaned)
    complete_participation(participant, timezone.now())
    return response


@transaction.atomic
def publish_version(version: QuestionnaireVersion) -> None:
    """Freeze ``version`` so participants may answer it. Raises ``ValueError`` on problems."""
    problems = version_problems(version)
    if problems:
        raise ValueError("; ".join(problems))
    version.published = True
    version.save(update_fields=["published"])


@transaction.atomic
def copy_version(version: QuestionnaireVersion) -> QuestionnaireVersion:
    """A new unpublished draft (the next version number) holding copies of the items."""
    numbers = version.questionnaire.versions.values_list("version", flat=True)
    draft = QuestionnaireVersion.objects.create(
        questionnaire=version.questionnaire,
        version=max(numbers, default=0) + 1,
        intro=version.intro,
        published=False,
    )
    names = [f.name for f in Item._meta.concrete_fields if f.name not in ("id", "version")]
    Item.objects.bulk_create(
        Item(version=draft, **{name: getattr(item, name) for name in names})
        for item in version.items.order_by("order", "pk")
    )
    return draft
