"""The plain upload page in headless chromium, once the trial is graded: trial.js polls the
grading status and, when the study releases the report, loads the server's report fragment
(``study:trial_report_fragment``) with htmx instead of writing a summary itself; while the
report is held back it says so and loads nothing. The report itself is a fake graded one
(tests/study/results/test_reports.py), so no sandbox is needed."""

from __future__ import annotations

from typing import Any

import pytest

from study.models import Participant, Study, Trial
from tests.factories import UserFactory
from tests.study.factories_study import make_participant, make_study
from tests.study.results.report_helpers import HIDDEN_NAME, VISIBLE_NAME, add_trial, fake_report
from tests.study.results.test_monitor_browser import sign_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TEMPLATE = "sde-binary-palindromes"  # the page renders the instance's README and files


def graded_trial(release: str) -> Trial:
    study = make_study(report_release=release, status=Study.Status.RECRUITING)
    amber = make_participant(
        study,
        user=UserFactory(username="p-amber-fox"),
        stage=Participant.Stage.IN_SESSION,
        session_index=1,
    )
    return add_trial(amber, 1, "A", slug=TEMPLATE, report=fake_report(overall=True))


def test_released_report_is_loaded_from_the_server(live_server: Any, page: Any) -> None:
    from playwright.sync_api import expect

    trial = graded_trial(Study.ReleasePolicy.IMMEDIATELY)
    sign_in(page, live_server, trial.participant.user)
    with page.expect_response(lambda r: "/report/fragment/" in r.url) as answer:
        page.goto(f"{live_server.url}/study/trials/{trial.pk}/")
    assert answer.value.status == 200
    report = page.locator("#report")
    expect(report).to_be_visible()
    expect(report).to_contain_text("5 of 5 checks passed")
    expect(report).to_contain_text(VISIBLE_NAME)
    expect(report).not_to_contain_text(HIDDEN_NAME)
    expect(report.get_by_role("link", name="Open the full report")).to_have_attribute(
        "href", f"/study/results/trials/{trial.pk}/report/"
    )
    expect(page.locator("#grading-text")).to_have_text("Graded. Your report is below.")
    expect(page.locator("#grading-bar")).to_have_attribute("style", "width: 100%;")


def test_held_back_report_is_not_loaded(live_server: Any, page: Any) -> None:
    from playwright.sync_api import expect

    trial = graded_trial(Study.ReleasePolicy.STUDY_END)
    sign_in(page, live_server, trial.participant.user)
    fragments: list[str] = []
    page.on("request", lambda r: fragments.append(r.url) if "/fragment/" in r.url else None)
    page.goto(f"{live_server.url}/study/trials/{trial.pk}/")
    expect(page.locator("#grading-text")).to_have_text(
        "Graded. Your report will be shown when the study releases it."
    )
    expect(page.locator("#report")).to_be_hidden()
    assert fragments == []
