"""factory_boy factories and helpers for studies, tracks, arms, task pools and participants.

``make_study()`` builds a complete, assignable study in one call; the factories stay small so
other tests can compose them.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import factory

from study.models import Arm, Participant, Study, TaskPoolEntry, Track
from tests.factories import UserFactory

DIFFICULTIES = ("easy", "medium", "hard")
# Real templates of the task bank (evaluation/bank): trials need instances of these.
BANK_TEMPLATES = (
    ("sde-binary-palindromes", "easy"),
    ("mle-palindromic-path", "medium"),
    ("ds-window-top-segments", "hard"),
)


class StudyFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Study

    slug = factory.Sequence(lambda n: f"study-{n}")
    title = factory.LazyAttribute(lambda s: f"Study {s.slug}")
    contact = "team@example.org"
    # Test studies use the bank's templates without validating them first, like a pilot.
    allow_unvalidated_templates = True


class TrackFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Track
        django_get_or_create = ("study", "code")

    study = factory.SubFactory(StudyFactory)
    code = Track.Code.SDE


class ArmFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Arm
        django_get_or_create = ("study", "condition")

    study = factory.SubFactory(StudyFactory)
    condition = "A"
    name = factory.LazyAttribute(lambda a: "No AI" if a.condition == "A" else f"AI ({a.condition})")
    ai_mode = factory.LazyAttribute(
        lambda a: Arm.AIMode.NONE if a.condition == "A" else Arm.AIMode.CHAT
    )


class TaskPoolEntryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TaskPoolEntry

    track = factory.SubFactory(TrackFactory)
    study = factory.SelfAttribute("track.study")
    template_slug = factory.Sequence(lambda n: f"task-{n:03d}")
    difficulty = factory.Iterator(DIFFICULTIES)


class ParticipantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Participant

    study = factory.SubFactory(StudyFactory)
    user = factory.SubFactory(UserFactory, username=factory.Sequence(lambda n: f"p-{n:05d}"))
    internal_id = factory.LazyFunction(lambda: secrets.token_hex(8))
    stage = Participant.Stage.SCREENED


def synthetic_templates(n: int, prefix: str = "task") -> list[tuple[str, str]]:
    """``n`` (slug, difficulty) pairs cycling easy, medium, hard (not in the bank)."""
    return [(f"{prefix}-{i + 1:02d}", DIFFICULTIES[i % 3]) for i in range(n)]


def make_study(
    *,
    tracks: Sequence[str] = ("SDE",),
    templates: Mapping[str, Iterable[tuple[str, str]]] | Iterable[tuple[str, str]] | None = None,
    conditions: str = "AB",
    **fields: Any,
) -> Study:
    """A study with tracks, one arm per condition letter and a task pool.

    ``templates``: (slug, difficulty) pairs for every track, or a mapping track code -> pairs;
    default: nine synthetic templates per track (3 x easy/medium/hard). ``fields`` go to the
    Study (e.g. ``sessions=1``, ``target_participants=10``).
    """
    study: Study = StudyFactory.create(**fields)
    for letter in conditions:
        ArmFactory(study=study, condition=letter)
    for code in tracks:
        track = TrackFactory(study=study, code=code)
        if templates is None:
            pairs: Iterable[tuple[str, str]] = synthetic_templates(9, prefix=code.lower())
        elif isinstance(templates, Mapping):
            pairs = templates.get(code, ())
        else:
            pairs = templates
        for slug, difficulty in pairs:
            TaskPoolEntryFactory(
                study=study, track=track, template_slug=slug, difficulty=difficulty
            )
    return study


def make_participant(study: Study, track: str | Track | None = None, **fields: Any) -> Participant:
    """A screened participant of ``study`` in ``track`` (default: the study's first track)."""
    if isinstance(track, Track):
        track_obj: Track | None = track
    elif track is not None:
        track_obj = study.tracks.get(code=track)
    else:
        track_obj = study.tracks.order_by("code").first()
    participant: Participant = ParticipantFactory.create(study=study, track=track_obj, **fields)
    return participant
