"""Minimal study objects for the consent, questionnaire and instrument tests."""

from __future__ import annotations

import secrets
from typing import Any

from study.models import (
    ConsentForm,
    Item,
    Participant,
    Questionnaire,
    QuestionnaireVersion,
    Study,
    Track,
    User,
)


def make_study(slug: str = "pilot", tracks: tuple[str, ...] = ("DS", "MLE", "SDE")) -> Study:
    study = Study.objects.create(slug=slug, title=f"Study {slug}", contact="team@example.org")
    for code in tracks:
        Track.objects.create(study=study, code=code)
    return study


def make_participant(
    study: Study, username: str = "p-amber-fox", stage: str = Participant.Stage.INVITED
) -> Participant:
    user = User.objects.create(username=username)
    return Participant.objects.create(
        study=study, user=user, internal_id=secrets.token_hex(8), stage=stage
    )


def make_consent_form(
    study: Study, version: str = "1.0", *, mode: str = ConsentForm.Mode.WAIVER, **extra: Any
) -> ConsentForm:
    fields: dict[str, Any] = {
        "title": "Consent",
        "body_markdown": "## What we record\n\nYour **code** and edits.",
        "checkboxes": [
            {"id": "adult", "label": "I am 18 or older.", "required": True},
            {"id": "data_use", "label": "I agree to the recording.", "required": True},
            {"id": "public_code", "label": "Publish my code.", "required": False},
        ],
        "mode": mode,
    }
    fields.update(extra)
    return ConsentForm.objects.create(study=study, version=version, **fields)


def make_version(
    items: list[dict[str, Any]], *, slug: str = "q", version: int = 1, published: bool = True
) -> QuestionnaireVersion:
    questionnaire, _ = Questionnaire.objects.get_or_create(
        slug=slug, defaults={"title": f"Questionnaire {slug}", "kind": "screening"}
    )
    qv = QuestionnaireVersion.objects.create(
        questionnaire=questionnaire, version=version, intro="Hello *there*", published=published
    )
    for order, spec in enumerate(items, start=1):
        Item.objects.create(version=qv, order=order, **{"text": spec["key"], **spec})
    return qv


def opts(*values: str) -> list[dict[str, str]]:
    return [{"value": v, "label": v.title()} for v in values]


# Item specifications shared by the questionnaire tests.
ALL_TYPES: list[dict[str, Any]] = [
    {"key": "colour", "type": "single", "choices": opts("red", "blue")},
    {"key": "langs", "type": "multiple", "choices": opts("python", "go", "rust")},
    {"key": "agree5", "type": "likert5"},
    {"key": "agree7", "type": "likert7", "choices": [{"low": "Never", "high": "Always"}]},
    {"key": "hours", "type": "number", "min_value": 0, "max_value": 100},
    {"key": "nick", "type": "short_text"},
    {"key": "story", "type": "long_text", "required": False},
]
VALID = {
    "colour": "red",
    "langs": ["python", "go"],
    "agree5": "4",
    "agree7": "7",
    "hours": "12.5",
    "nick": "fox",
    "story": "",
}


CONDITIONAL: list[dict[str, Any]] = [
    {"key": "uses_ai", "type": "single", "choices": opts("yes", "no")},
    {
        "key": "ai_tools",
        "type": "multiple",
        "choices": opts("chat", "inline"),
        "show_if": {"item": "uses_ai", "in": ["yes"]},
    },
    {
        "key": "chat_hours",
        "type": "number",
        "min_value": 0,
        "max_value": 10,
        "show_if": {"item": "ai_tools", "in": ["chat"]},
    },
]
