"""The assignment service: audit rows, trials, dropouts, replacement and the caps."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.http import Http404
from django.utils import timezone

from study.assignment.balance import balance_table, balance_view
from study.assignment.design import ALGORITHM_VERSION, SEQUENCES, TaskInfo, difficulty_gap
from study.assignment.minimiser import Counts, exact_fill_candidates, score_candidates
from study.assignment.services import (
    AssignmentError,
    assign_plan,
    counted_assignments,
    design_for,
    exclude_for_balance,
    plan_of,
    release_plan,
    replay,
)
from study.models import Assignment, AssignmentLock, Participant, Trial
from tests.study.factories_study import (
    BANK_TEMPLATES,
    ParticipantFactory,
    make_participant,
    make_study,
    synthetic_templates,
)

pytestmark = pytest.mark.django_db

Stage = Participant.Stage


@pytest.fixture
def study():
    return make_study(tracks=("SDE",), target_participants=45, overbooking=5)


def test_assignment_writes_a_replayable_audit_row(study):
    participant = make_participant(study)

    assignment = assign_plan(participant, rng_seed=1234, create_trials=False)

    assert assignment.seed == 1234
    assert assignment.algorithm_version == ALGORITHM_VERSION
    assert assignment.p_best == 0.9
    assert assignment.sequence in SEQUENCES
    pool = set(study.pool.values_list("template_slug", flat=True))
    assert len(set(assignment.tasks)) == 4
    assert set(assignment.tasks) <= pool
    # Uses first (the default), but three tasks of each difficulty can balance every cell with
    # difficulty-matched plans alone, so those are the candidates: 9 tasks, 4 sequences.
    assert assignment.n_candidates == 2592
    assert assignment.n_tied == 2592  # on empty counts
    snapshot = assignment.counts_before
    assert snapshot["participants"] == 0
    assert set(snapshot["task"].values()) == {0}
    assert snapshot["target"] == 45
    assert snapshot["target_source"] == "study"
    assert snapshot["priority"] == "uses"
    assert snapshot["exact_fill"] is True
    assert sorted(slug for slug, _ in snapshot["pool"]) == sorted(pool)
    assert AssignmentLock.objects.filter(study=study).count() == 1
    choice = replay(assignment)
    assert choice.plan == plan_of(assignment)
    assert (choice.min_score, choice.n_tied) == (assignment.min_score, assignment.n_tied)


def test_uses_first_takes_the_most_difficulty_matched_of_the_best_balanced_plans():
    # easy, medium, hard, easy, medium: every matched plan holds both medium tasks, so matched
    # plans alone cannot balance uses; plans within a gap of one can, and the gap breaks ties.
    study = make_study(tracks=("SDE",), templates=synthetic_templates(5), target_participants=45)
    levels = {"easy": 1, "medium": 2, "hard": 3}
    pool = tuple(
        sorted(
            TaskInfo(s, "SDE", d) for s, d in study.pool.values_list("template_slug", "difficulty")
        )
    )
    design = design_for(pool, SEQUENCES, 4, "uses")
    assert design.gaps is not None
    # Of the 5 x 4 x 3 x 2 task orders x 4 sequences (480), the 256 within a difficulty gap of
    # one can already balance every cell; wider gaps are not candidates.
    assert len(design.candidates) == 256
    assert set(design.gaps) == {0, 1}
    matched = 0
    for _ in range(12):
        a = assign_plan(make_participant(study), create_trials=False, p_best=1.0)
        counts = Counts.from_json(a.counts_before)
        scores = score_candidates(design.candidates, counts)
        exact = set(exact_fill_candidates(design.candidates, counts, 45))
        admissible = [i for i, p in enumerate(design.candidates) if not exact or p in exact]
        best = min(scores[i] for i in admissible)
        least_gap = min(design.gaps[i] for i in admissible if scores[i] == best)
        gap = difficulty_gap(plan_of(a), {t.slug: levels[t.difficulty] for t in pool})
        assert gap == least_gap
        matched += gap == 0
    assert matched >= 1


def test_difficulty_first_matches_the_ai_and_no_ai_tasks(study):
    study.balance_priority = "difficulty"
    study.save(update_fields=["balance_priority"])
    levels = {"easy": 1, "medium": 2, "hard": 3}
    difficulty = dict(study.pool.values_list("template_slug", "difficulty"))
    for _ in range(6):
        a = assign_plan(make_participant(study), create_trials=False)
        sums = {"A": 0, "B": 0}
        for slug, condition in zip(a.tasks, a.sequence, strict=True):
            sums[condition] += levels[difficulty[slug]]
        assert sums["A"] == sums["B"]


def test_later_participants_see_earlier_plans_in_their_counts(study):
    first = assign_plan(make_participant(study), create_trials=False)
    second = assign_plan(make_participant(study), create_trials=False)

    counts = second.counts_before
    assert counts["participants"] == 1
    assert counts["sequence"][first.sequence] == 1
    for position, (slug, condition) in enumerate(zip(first.tasks, first.sequence, strict=True), 1):
        assert counts["task_condition"][slug][condition] == 1
        assert counts["task_position"][slug][str(position)] == 1


def test_assigning_twice_returns_the_same_plan(study):
    participant = make_participant(study)
    first = assign_plan(participant, create_trials=False)
    assert assign_plan(participant, create_trials=False).pk == first.pk
    assert Assignment.objects.count() == 1


def test_trials_get_fresh_instances_and_arms_that_follow_the_sequence():
    study = make_study(templates=BANK_TEMPLATES[:2], sessions=1, trials_per_session=2)
    seeds = []
    for _ in range(2):
        participant = make_participant(study)
        assignment = assign_plan(participant)
        trials = list(Trial.objects.filter(participant=participant).select_related("arm"))
        assert [t.period for t in trials] == [1, 2]
        assert [t.session_index for t in trials] == [1, 1]
        assert [t.arm.condition for t in trials] == list(assignment.sequence)
        assert [t.template_slug for t in trials] == assignment.tasks
        for trial in trials:
            assert trial.instance.seed == trial.seed
            assert trial.instance.template.slug == trial.template_slug
            assert 0 <= trial.seed < 2**31
        seeds += [t.seed for t in trials]
    assert len(set(seeds)) == 4  # a fresh seed per participant and task


def test_two_sessions_of_one_trial_alternate_the_conditions():
    study = make_study(templates=BANK_TEMPLATES[:2], sessions=2, trials_per_session=1)
    participant = make_participant(study)
    assignment = assign_plan(participant)
    assert assignment.sequence in {"AB", "BA"}
    trials = Trial.objects.filter(participant=participant)
    assert [t.session_index for t in trials] == [1, 2]


def test_a_dropout_frees_its_slot(study):
    dropout = make_participant(study)
    assign_plan(dropout, create_trials=False)
    release_plan(dropout)

    assert Assignment.objects.get(participant=dropout).released
    newcomer = assign_plan(make_participant(study), create_trials=False)
    assert newcomer.counts_before["participants"] == 0
    assert newcomer.replaces is None  # a plain release: the minimiser refills the cells


def test_inactive_participants_age_out_but_completers_always_count(study):
    old = timezone.now() - timedelta(days=5)
    stale = make_participant(study, stage=Stage.IN_SESSION)
    done = make_participant(study)
    waiting = make_participant(study, stage=Stage.WAITING)
    for p in (stale, done, waiting):
        assign_plan(p, create_trials=False)
    Participant.objects.filter(pk=done.pk).update(stage=Stage.COMPLETE)
    Participant.objects.filter(pk__in=[stale.pk, done.pk, waiting.pk]).update(last_activity_at=old)
    Participant.objects.filter(pk=waiting.pk).update(
        next_session_closes_at=timezone.now() + timedelta(hours=3)
    )

    counted = set(counted_assignments(study).values_list("participant", flat=True))
    assert counted == {done.pk, waiting.pk}


def test_withdrawn_and_excluded_participants_do_not_count(study):
    withdrawn = make_participant(study)
    excluded = make_participant(study)
    for p in (withdrawn, excluded):
        assign_plan(p, create_trials=False)
    Participant.objects.filter(pk=withdrawn.pk).update(stage=Stage.WITHDRAWN)
    Participant.objects.filter(pk=excluded.pk).update(stage=Stage.EXCLUDED)
    assert not counted_assignments(study).exists()


def test_an_excluded_completer_is_replaced_by_the_same_plan(study):
    completer = make_participant(study)
    original = assign_plan(completer, create_trials=False)
    Participant.objects.filter(pk=completer.pk).update(stage=Stage.COMPLETE)
    exclude_for_balance(completer)

    replacement = assign_plan(make_participant(study), create_trials=False)
    after = assign_plan(make_participant(study), create_trials=False)

    assert replacement.replaces_id == original.pk
    assert plan_of(replacement) == plan_of(original)
    assert replacement.counts_before["participants"] == 0
    assert after.replaces is None  # the queue is used up


def test_a_released_replacement_frees_the_original_plan_again(study):
    completer = make_participant(study)
    original = assign_plan(completer, create_trials=False)
    exclude_for_balance(completer)
    first = make_participant(study)
    assign_plan(first, create_trials=False)
    release_plan(first, replace=False)

    second = assign_plan(make_participant(study), create_trials=False)
    assert second.replaces_id == original.pk


def test_session_two_no_shows_are_replaced_when_the_study_says_so(study):
    no_show = make_participant(study, stage=Stage.WAITING, session_index=2)
    assign_plan(no_show, create_trials=False)
    released = release_plan(no_show)
    assert released is not None
    assert released.excluded_for_balance

    study.replace_session2_no_shows = False
    study.save(update_fields=["replace_session2_no_shows"])
    other = make_participant(study, stage=Stage.WAITING, session_index=2)
    assign_plan(other, create_trials=False)
    released = release_plan(Participant.objects.get(pk=other.pk))
    assert released is not None
    assert released.released
    assert not released.excluded_for_balance


def test_assignment_stops_at_target_plus_overbooking():
    study = make_study(target_participants=2, overbooking=1)
    for _ in range(3):
        assign_plan(make_participant(study), create_trials=False)
    with pytest.raises(AssignmentError, match="already has 3 counted participants"):
        assign_plan(make_participant(study), create_trials=False)


def test_a_track_pool_smaller_than_the_plan_is_refused():
    study = make_study(templates=[("t1", "easy"), ("t2", "hard"), ("t3", "easy")])
    with pytest.raises(AssignmentError, match="has 3 active task"):
        assign_plan(make_participant(study), create_trials=False)
    assert not Assignment.objects.exists()


def test_participants_without_a_track_or_who_ended_get_no_plan(study):
    with pytest.raises(AssignmentError, match="no track"):
        assign_plan(ParticipantFactory.create(study=study, track=None), create_trials=False)
    declined = make_participant(study, stage=Stage.DECLINED)
    with pytest.raises(AssignmentError, match="ended"):
        assign_plan(declined, create_trials=False)


# --- The live balance table (study/assignment/balance.py) --------------------------------------
def test_balance_table_shows_what_the_minimiser_counts(study, django_assert_num_queries):
    kept, done, gone = (make_participant(study) for _ in range(3))
    plans = {p.pk: assign_plan(p, create_trials=False) for p in (kept, done, gone)}
    Participant.objects.filter(pk=done.pk).update(stage=Stage.COMPLETE)
    release_plan(gone)

    # arms, pool, counted plans, tracks with a pool, released/excluded/replacement totals
    with django_assert_num_queries(8):
        table = balance_table(study)

    assert (table["counted"], table["completed"], table["released"]) == (2, 1, 1)
    (track,) = table["tracks"]
    assert track["code"] == "SDE"
    assert len(track["tasks"]) == 9
    rows = {row["slug"]: row for row in track["tasks"]}
    for participant in (kept, done):
        a = plans[participant.pk]
        for slug, condition in zip(a.tasks, a.sequence, strict=True):
            assert rows[slug]["counted"][table["conditions"].index(condition)] >= 1
    assert sum(row["uses"] for row in track["tasks"]) == 8
    assert sum(sum(row["completed"]) for row in track["tasks"]) == 4
    assert [s["sequence"] for s in track["sequences"]] == list(SEQUENCES)
    assert sum(s["counted"] for s in track["sequences"]) == 2


def test_balance_page_renders_for_a_researcher(study, admin_researcher, rf):
    assign_plan(make_participant(study), create_trials=False)
    request = rf.get("/")
    request.user = admin_researcher
    response = balance_view(request, study.pk)
    html = response.render().content.decode()
    assert "Track SDE: 1 counted, 0 completed" in html
    assert "Target: 45 participants (the study&#x27;s target)." in html
    assert "Balance priority: Balance task uses first" in html
    assert "sde-01" in html
    assert "ABBA" in html


def test_balance_page_hides_other_researchers_studies(study, researcher, rf):
    request = rf.get("/")
    request.user = researcher
    with pytest.raises(Http404):
        balance_view(request, study.pk)
