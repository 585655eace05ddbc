"""The shipped instruments and default consent: idempotent install, required topics."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string

from study.enrolment.consent import render_consent, validate_checkboxes
from study.models import ConsentForm, Item, Questionnaire, QuestionnaireVersion, Study
from study.questionnaires.admin import version_problems
from study.questionnaires.forms import build_form
from study.questionnaires.instruments import (
    attach_default_instruments,
    install_default_consent,
    install_default_instruments,
)
from study.questionnaires.scoring import scale_scores
from study.questionnaires.services import save_response
from tests.study.fixtures_instruments import make_participant, make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def installed():
    return install_default_instruments()


def items_of(version: QuestionnaireVersion) -> dict[str, Item]:
    return {item.key: item for item in version.items.all()}


def test_install_creates_three_published_questionnaires(installed):
    assert set(installed) == {"screening", "post-trial", "post-study"}
    kinds = {slug: v.questionnaire.kind for slug, v in installed.items()}
    assert kinds == {
        "screening": "screening",
        "post-trial": "post_trial",
        "post-study": "post_study",
    }
    for version in installed.values():
        assert version.version == 1
        assert version.published
        assert version_problems(version) == []  # every item is well-formed


def test_install_is_idempotent(installed):
    counts = (
        Questionnaire.objects.count(),
        QuestionnaireVersion.objects.count(),
        Item.objects.count(),
    )
    again = install_default_instruments()
    assert {k: v.pk for k, v in again.items()} == {k: v.pk for k, v in installed.items()}
    assert counts == (
        Questionnaire.objects.count(),
        QuestionnaireVersion.objects.count(),
        Item.objects.count(),
    )


def test_screening_covers_background_and_decides_the_track(installed):
    items = items_of(installed["screening"])
    for key in (
        "age_band",
        "education",
        "programming_years",
        "languages",
        "editors",
        "ai_frequency",
        "ai_tools",
        "track_preference",
    ):
        assert key in items, key
    track = items["track_preference"]
    assert track.type == "single"
    assert [c["value"] for c in track.choices] == ["SDE", "MLE", "DS", "none"]
    age = items["age_band"]
    assert age.type == "single"
    assert "25_34" in [c["value"] for c in age.choices]
    assert not any(item.type == "number" for item in items.values())  # no exact ages/years


def test_post_trial_has_raw_nasa_tlx_and_confidence(installed):
    items = items_of(installed["post-trial"])
    tlx = [item for item in items.values() if item.scale == "nasa_tlx"]
    assert sorted(item.key for item in tlx) == sorted(
        [
            "tlx_mental",
            "tlx_physical",
            "tlx_temporal",
            "tlx_performance",
            "tlx_effort",
            "tlx_frustration",
        ]
    )
    assert all(
        (i.type, i.min_value, i.max_value, i.required) == ("number", 0, 100, True) for i in tlx
    )
    assert items["confidence_correct"].type == "likert7"


def test_post_study_covers_the_required_topics(installed):
    items = items_of(installed["post-study"])
    scales = {item.scale.split(":")[0] for item in items.values() if item.scale}
    assert {
        "usability",
        "load_with_ai",
        "load_without_ai",
        "confidence_with_ai",
        "confidence_without_ai",
        "trust_code",
        "trust_explanations",
        "realism",
    } <= scales
    for key in ("cmp_preferred", "ai_roles", "order_effect", "report_accuracy", "comments_general"):
        assert key in items, key
    texts = " ".join(item.text for item in items.values())
    assert "with the AI assistant" in texts
    assert "without the AI assistant" in texts
    assert items["report_accuracy"].show_if == {"item": "report_seen", "in": ["yes"]}


def test_free_text_items_are_optional(installed):
    for version in installed.values():
        for item in version.items.filter(type__in=["short_text", "long_text"]):
            assert not item.required, item.key


def test_post_trial_scores_raw_tlx_as_the_mean_of_six(installed):
    version = installed["post-trial"]
    answers = {
        "tlx_mental": "80",
        "tlx_physical": "10",
        "tlx_temporal": "60",
        "tlx_performance": "40",
        "tlx_effort": "70",
        "tlx_frustration": "20",
        "confidence_correct": "5",
        "confidence_efficient": "4",
        "understood_task": "6",
    }
    form = build_form(version, answers)
    assert form.is_valid(), form.errors
    response = save_response(make_participant(make_study()), version, form.cleaned_data)
    scores = scale_scores(response)
    assert scores["nasa_tlx"] == pytest.approx(280 / 6)
    assert scores["confidence"] == 5


@pytest.mark.parametrize("slug", ["screening", "post-trial", "post-study"])
def test_shipped_questionnaires_render(installed, slug):
    version = installed[slug]
    html = render_to_string(
        "study/questionnaire_form.html",
        {"form": build_form(version), "questionnaire_version": version, "action_url": "/"},
    )
    assert html.count('class="q-item') == version.items.count()


# --- Consent ------------------------------------------------------------------------------
def test_default_consent_is_installed_once_and_made_current():
    study = make_study()
    form = install_default_consent(study)
    again = install_default_consent(study)
    assert again.pk == form.pk
    assert ConsentForm.objects.count() == 1
    study.refresh_from_db()
    assert study.consent_form_id == form.pk
    assert form.mode == ConsentForm.Mode.WAIVER
    validate_checkboxes(form.checkboxes)
    required = {box["id"] for box in form.checkboxes if box["required"]}
    optional = {box["id"] for box in form.checkboxes if not box["required"]}
    assert {"adult", "data_use"} <= required
    assert {"public_code"} <= optional


def test_default_consent_covers_recording_and_anonymisation():
    study = make_study()
    study.withdrawal_policy = Study.WithdrawalPolicy.DELETE
    study.save(update_fields=["withdrawal_policy"])
    text = install_default_consent(study).body_markdown
    for topic in (
        "your code",
        "every edit",
        "AI assistant",
        "timings",
        "anonymised",
        "pseudonym",
        "team@example.org",
        study.title,
        "delete the research data",
    ):
        assert topic in text, topic
    assert "$" not in text  # every placeholder filled
    assert "<h2>What the platform records</h2>" in render_consent(
        ConsentForm.objects.get(study=study)
    )


def test_attach_fills_only_empty_slots():
    study = make_study()
    attach_default_instruments(study)
    study.refresh_from_db()
    slots = {
        "screening": study.screening,
        "post-trial": study.post_trial,
        "post-study": study.post_study,
    }
    assert {slug: v.questionnaire.slug if v else None for slug, v in slots.items()} == {
        slug: slug for slug in slots
    }
    assert study.consent_form is not None
    attach_default_instruments(study)
    assert QuestionnaireVersion.objects.count() == 3
