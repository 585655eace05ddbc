"""Questionnaire forms: validation per item type, conditional display, responses, scores."""

from __future__ import annotations

from typing import Any

import pytest
from django.template.loader import render_to_string
from django.urls import reverse

from study.models import Answer, Item, Participant, Response, Track
from study.questionnaires.admin import (
    copy_version,
    is_frozen,
    item_problems,
    publish_version,
    version_problems,
)
from study.questionnaires.forms import REQUIRED_MESSAGE, build_form, item_choices, visible_keys
from study.questionnaires.scoring import decide_track, scale_scores
from study.questionnaires.services import save_response
from tests.study.fixtures_instruments import make_participant, make_study, make_version, opts

pytestmark = pytest.mark.django_db

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


@pytest.fixture
def all_types():
    return make_version(ALL_TYPES)


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


@pytest.fixture
def conditional():
    return make_version(CONDITIONAL, slug="cond")


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


# --- Responses ----------------------------------------------------------------------------
def test_save_response_is_idempotent(all_types):
    participant = make_participant(make_study())
    form = build_form(all_types, VALID)
    assert form.is_valid()
    first = save_response(participant, all_types, form.cleaned_data)
    again = save_response(participant, all_types, {**form.cleaned_data, "nick": "changed"})
    assert again.pk == first.pk
    assert Response.objects.count() == 1
    answers = {a.item.key: a.value for a in first.answers.all()}
    assert answers["nick"] == "fox"
    assert answers["hours"] == 12.5
    assert answers["agree5"] == 4
    assert answers["langs"] == ["python", "go"]
    assert "story" not in answers


def test_whole_numbers_are_stored_as_integers(all_types):
    participant = make_participant(make_study())
    form = build_form(all_types, {**VALID, "hours": "40"})
    assert form.is_valid()
    response = save_response(participant, all_types, form.cleaned_data)
    assert Answer.objects.get(response=response, item__key="hours").value == 40


def test_save_response_refuses_another_participants_trial(all_types):
    study = make_study()
    participant = make_participant(study)
    other = make_participant(study, "p-blue-owl")

    class FakeTrial:
        participant_id = other.pk

    with pytest.raises(ValueError, match="another participant"):
        save_response(participant, all_types, VALID, trial=FakeTrial())  # type: ignore[arg-type]


# --- Scales -------------------------------------------------------------------------------
def test_scale_scores_average_and_reverse_items():
    version = make_version(
        [
            *(
                {
                    "key": f"tlx{i}",
                    "type": "number",
                    "min_value": 0,
                    "max_value": 100,
                    "scale": "nasa_tlx",
                }
                for i in range(6)
            ),
            {"key": "u1", "type": "likert5", "scale": "usability"},
            {"key": "u2", "type": "likert5", "scale": "usability:r"},
            {"key": "note", "type": "short_text", "scale": "usability", "required": False},
        ],
        slug="scales",
    )
    participant = make_participant(make_study())
    data = {f"tlx{i}": v for i, v in enumerate([10, 20, 30, 40, 50, 60])}
    response = save_response(participant, version, {**data, "u1": 5, "u2": 2, "note": "hi"})
    scores = scale_scores(response)
    assert scores == {"nasa_tlx": 35.0, "usability": 4.5}


# --- Tracks -------------------------------------------------------------------------------
def code_of(track: Track | None) -> str | None:
    return track.code if track else None


TRACK_ITEMS = [
    {"key": "track_preference", "type": "single", "choices": opts("SDE", "MLE", "DS", "none")}
]


def test_track_follows_the_stated_preference():
    study = make_study()
    version = make_version(TRACK_ITEMS, slug="screen")
    response = save_response(make_participant(study), version, {"track_preference": "MLE"})
    assert code_of(decide_track(study, response)) == "MLE"


@pytest.mark.parametrize("answer", ["none", None])
def test_no_preference_falls_back_to_the_least_filled_track(answer):
    study = make_study()
    version = make_version(TRACK_ITEMS, slug="screen")
    tracks = {t.code: t for t in study.tracks.all()}
    for n, code in enumerate(["DS", "DS", "SDE", "MLE", "MLE"]):
        placed = make_participant(study, f"p-{n}", stage=Participant.Stage.ASSIGNED)
        Participant.objects.filter(pk=placed.pk).update(track=tracks[code])
    # A declined participant no longer takes a place.
    declined = make_participant(study, "p-gone", stage=Participant.Stage.DECLINED)
    Participant.objects.filter(pk=declined.pk).update(track=tracks["SDE"])
    data = {"track_preference": answer} if answer else {}
    response = save_response(make_participant(study, "p-new"), version, data)
    assert code_of(decide_track(study, response)) == "SDE"


def test_preference_for_a_track_the_study_lacks_falls_back():
    study = make_study(tracks=("DS", "SDE"))
    version = make_version(TRACK_ITEMS, slug="screen")
    response = save_response(make_participant(study), version, {"track_preference": "MLE"})
    assert code_of(decide_track(study, response)) == "DS"  # tie broken by code


def test_study_without_tracks_decides_nothing():
    study = make_study(tracks=())
    version = make_version(TRACK_ITEMS, slug="screen")
    response = save_response(make_participant(study), version, {"track_preference": "SDE"})
    assert decide_track(study, response) is None


# --- Builder ------------------------------------------------------------------------------
def test_item_problems_explain_bad_configuration():
    assert "choices" in item_problems(Item(key="a", type="single", choices=[]))
    assert "choices" in item_problems(Item(key="a", type="likert5", choices=[{"x": 1}]))
    assert "max_value" in item_problems(Item(key="a", type="number", min_value=5, max_value=1))
    assert "show_if" in item_problems(Item(key="a", type="short_text", show_if={"item": "a"}))
    assert item_problems(Item(key="a", type="likert7", choices=[{"low": "L", "high": "H"}])) == {}


def test_publish_checks_order_of_conditions_and_freezes():
    draft = make_version(
        [
            {"key": "later", "type": "short_text", "show_if": {"item": "first", "in": ["x"]}},
            {"key": "first", "type": "short_text"},
        ],
        slug="draft",
        published=False,
    )
    assert any("earlier item" in p for p in version_problems(draft))
    with pytest.raises(ValueError, match="earlier item"):
        publish_version(draft)
    Item.objects.filter(version=draft, key="first").update(order=0)
    publish_version(draft)
    draft.refresh_from_db()
    assert draft.published
    assert is_frozen(draft)


def test_copy_version_makes_an_editable_draft_with_the_same_items(all_types):
    draft = copy_version(all_types)
    assert draft.version == 2
    assert not draft.published
    assert not is_frozen(draft)
    assert list(draft.items.values_list("key", "type", "choices")) == list(
        all_types.items.values_list("key", "type", "choices")
    )


# --- Admin builder ------------------------------------------------------------------------
def test_admin_pages_open_and_published_items_are_read_only(client, admin_researcher, all_types):
    client.force_login(admin_researcher)
    for name in ("questionnaire", "questionnaireversion", "response"):
        assert client.get(reverse(f"admin:study_{name}_changelist")).status_code == 200
    page = client.get(reverse("admin:study_questionnaireversion_change", args=[all_types.pk]))
    assert page.status_code == 200
    assert b"Published: frozen" in page.content
    assert b'name="items-0-key"' not in page.content  # inline shown read-only


def test_admin_draft_items_are_editable_and_publish_action_freezes(
    client, admin_researcher, all_types
):
    client.force_login(admin_researcher)
    draft = copy_version(all_types)
    page = client.get(reverse("admin:study_questionnaireversion_change", args=[draft.pk]))
    assert b'name="items-0-key"' in page.content
    response = client.post(
        reverse("admin:study_questionnaireversion_changelist"),
        {"action": "publish", "_selected_action": [draft.pk]},
    )
    assert response.status_code == 302
    draft.refresh_from_db()
    assert draft.published


def test_admin_response_page_shows_answers_and_scores(client, admin_researcher, all_types):
    participant = make_participant(make_study())
    response = save_response(participant, all_types, {"agree5": 4, "nick": "fox"})
    client.force_login(admin_researcher)
    page = client.get(reverse("admin:study_response_change", args=[response.pk]))
    assert page.status_code == 200
    assert b"fox" in page.content


def _builder_post(draft, items: list[dict[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {
        "questionnaire": draft.questionnaire_id,
        "version": draft.version,
        "intro": "",
        "items-TOTAL_FORMS": len(items),
        "items-INITIAL_FORMS": 0,
        "items-MIN_NUM_FORMS": 0,
        "items-MAX_NUM_FORMS": 1000,
    }
    for n, item in enumerate(items):
        fields = {"order": n, "required": "on", "choices": "[]", "show_if": "{}", **item}
        data.update({f"items-{n}-{k}": v for k, v in fields.items()})
    return data


def test_admin_builder_rejects_bad_items_with_messages(client, admin_researcher, conditional):
    Item.objects.filter(version=conditional).delete()
    conditional.published = False
    conditional.save(update_fields=["published"])
    client.force_login(admin_researcher)
    url = reverse("admin:study_questionnaireversion_change", args=[conditional.pk])
    bad = [
        {"key": "pick", "type": "single", "text": "Pick"},
        {
            "key": "later",
            "type": "short_text",
            "text": "T",
            "show_if": '{"item": "nowhere", "in": ["x"]}',
        },
    ]
    page = client.post(url, _builder_post(conditional, bad))
    assert page.status_code == 200
    assert b"List the options" in page.content
    assert b"must name an earlier item" in page.content
    good = [
        {
            "key": "pick",
            "type": "single",
            "text": "Pick",
            "choices": '[{"value": "a", "label": "A"}]',
        },
        {
            "key": "later",
            "type": "short_text",
            "text": "T",
            "show_if": '{"item": "pick", "in": ["a"]}',
        },
    ]
    assert client.post(url, _builder_post(conditional, good)).status_code == 302
    assert list(conditional.items.values_list("key", flat=True)) == ["pick", "later"]
    duplicate = [
        {"key": "x", "type": "short_text", "text": "A"},
        {"key": "x", "type": "short_text", "text": "B"},
    ]
    page = client.post(url, _builder_post(conditional, duplicate))
    assert page.status_code == 200
    assert b"duplicate" in page.content
