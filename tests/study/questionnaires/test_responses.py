"""Stored responses, scale scores and the track a screening response decides."""

from __future__ import annotations

import pytest

from study.models import Answer, Participant, Response, Study, TaskPoolEntry, Track
from study.questionnaires.forms import build_form
from study.questionnaires.scoring import decide_track, scale_scores
from study.questionnaires.services import save_response
from tests.study.fixtures_instruments import (
    VALID,
    make_participant,
    make_study,
    make_version,
    opts,
)

pytestmark = pytest.mark.django_db


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


def test_no_preference_goes_to_the_track_furthest_below_its_target():
    study = make_study()
    Study.objects.filter(pk=study.pk).update(target_participants=30)
    study.refresh_from_db()
    study.tracks.filter(code="SDE").update(target_participants=20)  # DS and MLE: 5 each
    version = make_version(TRACK_ITEMS, slug="screen")
    tracks = {t.code: t for t in study.tracks.all()}
    for code, track in tracks.items():  # targets count only tracks with active tasks
        TaskPoolEntry.objects.create(
            study=study, track=track, template_slug=f"{code.lower()}-1", difficulty="easy"
        )
    for n, code in enumerate(["SDE"] * 12 + ["MLE"]):
        placed = make_participant(study, f"p-{n}", stage=Participant.Stage.ASSIGNED)
        Participant.objects.filter(pk=placed.pk).update(track=tracks[code])
    newcomer = make_participant(study, "p-new")
    Participant.objects.filter(pk=newcomer.pk).update(track=None)
    # Fewest participants: DS (0 of 5); furthest below target: SDE (12 of 20, 8 short).
    response = save_response(newcomer, version, {"track_preference": "none"})
    assert code_of(decide_track(study, response)) == "SDE"
