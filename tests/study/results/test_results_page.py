"""The results dashboard and its CSV: the trial-level table, bounded queries, access."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from study.configuration.snapshots import current_snapshot
from study.models import (
    Answer,
    ConfigSnapshot,
    Item,
    Participant,
    QuestionnaireVersion,
    Response,
    Study,
    Trial,
)
from study.questionnaires.instruments import attach_default_instruments
from study.results.dashboard import COLUMNS, dashboard, trial_table
from study.results.plan import plan_digest
from tests.factories import UserFactory
from tests.study.factories_study import make_participant, make_study
from tests.study.results.report_helpers import add_trial, fake_report, researcher_client

pytestmark = pytest.mark.django_db

TLX_KEYS = ("tlx_mental", "tlx_physical", "tlx_temporal", "tlx_performance", "tlx_effort")


@pytest.fixture(autouse=True)
def _ai_metrics() -> None:
    from ide_bridge.metrics import register

    register()


@pytest.fixture
def study() -> Study:
    study = make_study(tracks=("SDE", "MLE"), status=Study.Status.RECRUITING)
    attach_default_instruments(study)
    study.refresh_from_db()
    return study


def answer(
    participant: Participant,
    version: QuestionnaireVersion | None,
    values: dict[str, Any],
    trial: Trial | None = None,
) -> None:
    assert version is not None
    response = Response.objects.create(
        participant=participant, version=version, trial=trial, submitted_at=timezone.now()
    )
    items = {i.key: i for i in version.items.filter(key__in=values)}
    Answer.objects.bulk_create(
        Answer(response=response, item=items[key], value=value) for key, value in values.items()
    )


def post_trial(trial: Trial, tlx: int, confidence: int) -> None:
    values: dict[str, Any] = dict.fromkeys((*TLX_KEYS, "tlx_frustration"), tlx)
    values["confidence_correct"] = confidence
    answer(trial.participant, trial.participant.study.post_trial, values, trial=trial)


def add_complete_participant(study: Study, i: int) -> Participant:
    """Four graded trials (ABBA or BAAB), post-trial answers and the post-study AI roles."""
    p = make_participant(
        study,
        "SDE" if i % 2 else "MLE",
        user=UserFactory(username=f"p-done-{i:03d}"),
        stage=Participant.Stage.COMPLETE,
    )
    sequence = "ABBA" if i % 2 else "BAAB"
    for period, condition in enumerate(sequence, start=1):
        ai = condition == "B"
        passed = (i + period) % 3 != 0
        minutes = 20 + (i % 7) - (6 if ai else 0) + period
        task = (i + period) % 4  # every task in every period (a Latin square would do this)
        trial = add_trial(
            p,
            period,
            condition,
            slug=f"task-{task}",
            difficulty=("easy", "medium", "hard", "hard")[task],
            report=fake_report(overall=passed, duration_s=minutes * 60),
        )
        post_trial(trial, tlx=40 + (i % 5) * 5 - (10 if ai else 0), confidence=4 + int(ai))
    roles = ["coder", "debugger"] if i % 2 else ["coder"]
    answer(p, study.post_study, {"ai_roles": roles})
    return p


def test_trial_table_has_one_row_per_ended_trial_with_par60_tokens_and_scales(
    study: Study,
) -> None:
    from ide_bridge.models import AIRequest

    assert study.post_trial is not None
    doubt = Item.objects.create(
        version=study.post_trial, key="doubt", type="likert7", text="Doubt?", scale="confidence:r"
    )
    amber = make_participant(study, "SDE", user=UserFactory(username="p-amber-fox"))
    passed = add_trial(amber, 1, "A", report=fake_report(duration_s=1500.0))
    failed = add_trial(amber, 2, "B", report=fake_report(overall=False))
    expired = add_trial(amber, 3, "A", status=Trial.Status.EXPIRED, evaluation_status=None)
    queued = add_trial(amber, 4, "B", evaluation_status="queued")
    post_trial(passed, tlx=30, confidence=5)
    Answer.objects.create(response=passed.responses.get(), item=doubt, value=2)  # -> 6
    AIRequest.objects.create(
        trial=failed, kind="chat", provider="demo", prompt_tokens=250, completion_tokens=50
    )
    excluded = make_participant(study, "SDE", stage=Participant.Stage.EXCLUDED)
    add_trial(excluded, 1, "A")
    pending = make_participant(study, "MLE", stage=Participant.Stage.IN_SESSION)
    add_trial(pending, 1, "A", status=Trial.Status.ACTIVE)

    rows = {r["trial_id"]: r for r in trial_table(study)}
    assert set(rows) == {passed.pk, failed.pk, expired.pk, queued.pk}
    assert all(tuple(r) == COLUMNS for r in rows.values())
    first = rows[passed.pk]
    assert first["participant"] == amber.internal_id  # never the login pseudonym
    assert (first["condition"], first["ai"], first["track"], first["period"]) == (
        "A",
        False,
        "SDE",
        1,
    )
    assert (first["overall_pass"], first["completion_time_s"]) == (1, 1500.0)
    assert first["tokens"] is None  # no AI arm: no tokens
    assert first["nasa_tlx"] == 30.0
    assert first["confidence"] == 5.5  # mean of 5 and the reverse-scored 2 (-> 6)
    assert (rows[failed.pk]["overall_pass"], rows[failed.pk]["completion_time_s"]) == (0, 3600)
    assert (rows[failed.pk]["tokens"], rows[failed.pk]["ai_requests"]) == (300, 1)
    assert (rows[expired.pk]["overall_pass"], rows[expired.pk]["partial_pass"]) == (0, 0.0)
    assert rows[expired.pk]["completion_time_s"] == 3600.0
    assert rows[queued.pk]["overall_pass"] is None
    assert rows[queued.pk]["completion_time_s"] is None
    assert rows[queued.pk]["grading_status"] == "queued"


def test_csv_has_the_documented_columns(study: Study) -> None:
    for i in range(3):
        add_complete_participant(study, i)
    response = researcher_client(study).get(f"/study/results/{study.slug}/trials.csv")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="{study.slug}-trials.csv"'
    table = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert tuple(table[0]) == COLUMNS
    assert len(table) == 12
    assert {r["ai"] for r in table} == {"0", "1"}
    assert {r["tokens"] for r in table if r["ai"] == "0"} == {""}
    assert all(r["overall_pass"] in {"0", "1"} for r in table)
    assert "p-done-" not in response.content.decode()


def count_queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as context:
        assert client.get(url).status_code == 200
    return len(context.captured_queries)


def test_dashboard_queries_are_bounded(study: Study, django_assert_num_queries: Any) -> None:
    client = researcher_client(study)
    page, csv_url = (
        f"/study/results/{study.slug}/dashboard/",
        f"/study/results/{study.slug}/trials.csv",
    )
    for i in range(6):
        add_complete_participant(study, i)
    small = (count_queries(client, page), count_queries(client, csv_url))
    for i in range(6, 14):
        add_complete_participant(study, i)
    # session, user, the staff two-factor check (study/researchers/mfa.py), study, trials,
    # snapshots, AI metrics (one provider), post-trial scale answers; the page adds the
    # post-study AI roles and the arms (for the analysis plan).
    with django_assert_num_queries(10):
        response = client.get(page)
    with django_assert_num_queries(8):
        client.get(csv_url)
    assert small == (10, 8)

    html = response.content.decode()
    assert "Table 2" in html
    assert "B: AI (B)" in html
    assert "Overall pass (primary outcome), 56 graded trials of 14 participants" in html
    assert "Robustness check (participant level, McNemar): of 14 participants" in html
    assert "Completion time (PAR-60): on average" in html
    assert "Completion time, censored at the time limit (56 graded trials of 14" in html
    assert 'id="figure-pass_rates" type="application/json"' in html
    assert "vendor/plotly/plotly.min.js" in html
    assert "js/figures.js" in html
    assert "Wrote code that I then used" in html  # the AI roles figure's labels


def test_small_study_explains_skipped_statistics(study: Study) -> None:
    add_complete_participant(study, 1)
    html = researcher_client(study).get(f"/study/results/{study.slug}/dashboard/").content
    text = html.decode()
    assert "Completion time (censored at the time limit): not modelled — needs at least 10" in text
    assert "needs at least 2 participants with both conditions (have 1)" in text


def test_results_are_for_researchers_of_the_study_only(study: Study) -> None:
    for url in (
        f"/study/results/{study.slug}/dashboard/",
        f"/study/results/{study.slug}/trials.csv",
    ):
        assert Client().get(url).status_code == 302
        participant = Client()
        participant.force_login(UserFactory.create(username="p-amber-fox"))
        assert participant.get(url).status_code == 403
        assert researcher_client(make_study()).get(url).status_code == 404
        assert researcher_client(study).get(url).status_code == 200


def test_the_dashboard_shows_the_analysis_plan_and_the_deviations(study: Study) -> None:
    add_complete_participant(study, 1)
    html = researcher_client(study).get(f"/study/results/{study.slug}/dashboard/").content.decode()
    assert "Analysis plan and deviations" in html
    assert "The primary model was not fitted: needs at least 10 participants" in html
    assert "The completion-time model was not fitted" in html
    assert "logistic mixed model: pass ~ ai + period + task + (1 | participant)" in html
    assert "sequences ABBA, BAAB, ABAB, BABA" in html


def test_participants_under_another_plan_are_a_deviation(study: Study) -> None:
    for i in range(12):
        add_complete_participant(study, i)
    first = current_snapshot(study)
    study.sequence_set = Study.SequenceSet.MIRRORED
    study.save(update_fields=["sequence_set"])
    second = current_snapshot(study)
    assert first.content["analysis_plan"]["design"]["sequences"] == ["ABBA", "BAAB", "ABAB", "BABA"]
    assert second.content["analysis_plan"]["design"]["sequences"] == ["ABBA", "BAAB"]
    participants = list(study.participants.order_by("pk"))
    Participant.objects.filter(pk__in=[p.pk for p in participants[:6]]).update(snapshot=first)
    Participant.objects.filter(pk__in=[p.pk for p in participants[6:]]).update(snapshot=second)
    # A design setting is not an analysis change: both snapshots carry the plan that runs.
    data = dashboard(study)
    assert {r["analysis_plan"] for r in data["rows"]} == {plan_digest(data["plan"])}
    assert not any("joined under" in d for d in data["deviations"])
    # An older snapshot whose plan differs (e.g. written by an earlier version of the code).
    older = {**first.content["analysis_plan"], "version": "0.9"}
    ConfigSnapshot.objects.filter(pk=first.pk).update(
        content={**first.content, "analysis_plan": older}
    )
    data = dashboard(study)
    assert (
        "Participants joined under 2 version(s) of the analysis plan, not all of them the one "
        "this analysis ran (the configuration or the analysis code changed after they joined)."
        in data["deviations"]
    )
    assert data["stats"]["primary"]["computed"] is True
