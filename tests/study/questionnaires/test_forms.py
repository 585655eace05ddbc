"""Questionnaire forms: validation per item type and conditional display."""

from __future__ import annotations

from typing import Any

import pytest
from django.template.loader import render_to_string

from study.questionnaires.forms import REQUIRED_MESSAGE, build_form, item_choices, visible_keys
from study.questionnaires.services import save_response
from tests.study.fixtures_instruments import (
    VALID,
    make_participant,
    make_study,
)

pytestmark = pytest.mark.django_db


def errors_for(version, **changes: Any) -> dict[str, list[str]]:
    data = {**VALID, **changes}
    data = {k: v for k, v in data.items() if v is not None}
    form = build_form(version, data)
    assert not form.is_valid()
    return {key: [str(m) for m in messages] for key, messages in form.errors.items()}


def test_valid_answers_clean_to_typed_values(all_types):
    form = build_form(all_types, VALID)
    assert form.is_valid(), form.errors
    assert form.cleaned_data["agree5"] == 4
    assert form.cleaned_data["hours"] == 12.5
    assert form.cleaned_data["langs"] == ["python", "go"]


@pytest.mark.parametrize(
    ("changes", "key", "fragment"),
    [
        ({"hours": "lots"}, "hours", "Please enter a number"),
        ({"hours": "101"}, "hours", "no greater than 100"),
        ({"hours": "-1"}, "hours", "at least 0"),
        ({"hours": "nan"}, "hours", "Please enter a number"),
        ({"colour": "green"}, "colour", "choose one of the options"),
        ({"langs": ["python", "cobol"]}, "langs", "choose one of the options"),
        ({"agree5": "6"}, "agree5", "choose one of the options"),
        ({"agree7": "0"}, "agree7", "choose one of the options"),
        ({"nick": "x" * 301}, "nick", "under 300 characters"),
        ({"colour": None}, "colour", REQUIRED_MESSAGE),
        ({"langs": None}, "langs", REQUIRED_MESSAGE),
        ({"agree5": None}, "agree5", REQUIRED_MESSAGE),
        ({"hours": ""}, "hours", REQUIRED_MESSAGE),
        ({"nick": "   "}, "nick", REQUIRED_MESSAGE),
    ],
)
def test_bad_answers_give_a_message_on_their_item(all_types, changes, key, fragment):
    errors = errors_for(all_types, **changes)
    assert list(errors) == [key]
    assert fragment in " ".join(errors[key])


def test_optional_item_may_stay_empty(all_types):
    form = build_form(all_types, {k: v for k, v in VALID.items() if k != "story"})
    assert form.is_valid(), form.errors
    assert "story" not in form.cleaned_data or form.cleaned_data["story"] == ""


def test_likert_choices_carry_anchors(all_types):
    form = build_form(all_types)
    labels = [label for _, label in item_choices(all_types.items.get(key="agree7"))]
    assert labels[0] == "1 = Never"
    assert labels[-1] == "7 = Always"
    assert labels[3] == "4"
    default = [label for _, label in item_choices(all_types.items.get(key="agree5"))]
    assert form.fields["agree5"].widget.input_type == "radio"
    assert default[0].endswith("Strongly disagree")
    assert len(default) == 5


def test_invalid_form_renders_messages_and_a_summary(all_types):
    form = build_form(all_types, {**VALID, "hours": "lots", "colour": ""})
    assert not form.is_valid()
    html = render_to_string(
        "study/questionnaire_form.html",
        {"form": form, "questionnaire_version": all_types, "action_url": "/q/", "step_title": "Q"},
    )
    assert 'id="error-summary"' in html
    assert 'href="#id_hours"' in html
    assert 'href="#id_colour_0"' in html
    assert "Please enter a number" in html
    assert REQUIRED_MESSAGE in html
    assert 'aria-invalid="true"' in html
    assert "<fieldset" in html
    assert "<legend" in html
    assert "<em>there</em>" in html  # the intro is Markdown


# --- Conditional display ------------------------------------------------------------------
def test_hidden_required_item_is_not_required(conditional):
    form = build_form(conditional, {"uses_ai": "no"})
    assert form.is_valid(), form.errors


def test_shown_required_item_is_required(conditional):
    form = build_form(conditional, {"uses_ai": "yes"})
    assert not form.is_valid()
    assert form.errors["ai_tools"] == [REQUIRED_MESSAGE]


def test_answers_to_hidden_items_are_dropped_even_when_invalid(conditional):
    form = build_form(
        conditional, {"uses_ai": "no", "ai_tools": ["chat", "bogus"], "chat_hours": "99"}
    )
    assert form.is_valid(), form.errors
    assert form.cleaned_data == {"uses_ai": "no"}


def test_conditions_chain_through_hidden_controllers(conditional):
    items = list(conditional.items.all())
    assert visible_keys(items, {"uses_ai": "no", "ai_tools": ["chat"]}) == {"uses_ai"}
    assert visible_keys(items, {"uses_ai": "yes", "ai_tools": ["chat"]}) == {
        "uses_ai",
        "ai_tools",
        "chat_hours",
    }


def test_rendered_wrappers_carry_show_if_for_the_script(conditional):
    html = render_to_string(
        "study/questionnaire_form.html",
        {"form": build_form(conditional), "questionnaire_version": conditional, "action_url": "/"},
    )
    assert "data-show-if=" in html
    assert "&quot;uses_ai&quot;" in html
    assert "js/questionnaire.js" in html


def test_save_response_drops_hidden_answers(conditional):
    participant = make_participant(make_study())
    response = save_response(participant, conditional, {"uses_ai": "no", "ai_tools": ["chat"]})
    assert {a.item.key: a.value for a in response.answers.all()} == {"uses_ai": "no"}
