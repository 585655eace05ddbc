"""The participant journey in headless chromium: personal link -> consent -> screening -> the
first trial -> (trials finished) -> the waiting page with its countdown."""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.utils import timezone

from study.demo.answers import answers_for
from study.enrolment.accounts import create_participants
from study.models import Participant
from study.questionnaires.services import submit_post_trial
from study.trials.services import start_trial, submit_trial
from tests.factories import ResearcherFactory
from tests.study.helpers import grading_queued, journey_study

# A timeout here ends the run (thread method): SIGALRM inside Playwright's sync API leaves
# the main thread's event loop broken, and every later test would fail with it.
pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(method="thread"),
]


def fill_questionnaire(page: Any, answers: dict[str, Any]) -> None:
    """Answer what is visible, as a person would: click radios and boxes, type numbers/text."""
    for key, value in answers.items():
        values = value if isinstance(value, list) else [value]
        for v in values:
            choice = page.locator(f"input[name='{key}'][value='{v}']")
            if choice.count():
                if choice.first.is_visible():
                    choice.first.check()
                continue
            field = page.locator(f"[name='{key}']")
            if field.count() and field.first.is_visible():
                field.first.fill(str(v))


def test_link_to_waiting_page(live_server: Any, page: Any) -> None:
    study = journey_study(sessions=2, trials_per_session=2)
    account = create_participants(study, 1, created_by=ResearcherFactory.create())[0]
    participant = account.participant

    page.goto(live_server.url + account.login_path)
    page.get_by_role("button", name="Continue").click()
    page.wait_for_url("**/study/journey/welcome/")
    page.get_by_role("link", name="Continue to the consent information").click()
    page.wait_for_url("**/study/enrolment/consent/")
    for box in page.locator("input[type=checkbox]").all():
        box.check()
    page.locator("button[name=decision][value=agree]").click()
    page.wait_for_url("**/study/questionnaires/screening/")

    screening = study.screening
    assert screening is not None
    fill_questionnaire(page, answers_for(screening, random.Random(4), track_preference="SDE"))
    page.locator("form button[type=submit]").last.click()
    page.wait_for_url("**/workspace/**")
    assert page.get_by_text("Task 1").first.is_visible()
    participant.refresh_from_db()
    assert participant.stage == Participant.Stage.ASSIGNED  # the task page starts no clock
    page.get_by_role("button", name="Start task").click()
    page.locator("#workspace").wait_for()
    page.evaluate("() => { delete document.getElementById('workspace').dataset.telemetryToken; }")
    participant.refresh_from_db()
    assert participant.stage == Participant.Stage.IN_SESSION

    # The trials themselves are driven in the workspace tests; finish session 1 on the server.
    rng = random.Random(9)
    with grading_queued():
        for trial in participant.trials.filter(session_index=1).order_by("period"):
            trial = start_trial(trial, timezone.now())
            submit_trial(
                trial,
                {"solution.py": "def nothing():\n    pass\n"},
                timezone.now(),
                channel="editor",
            )
            assert study.post_trial is not None
            submit_post_trial(participant, trial, answers_for(study.post_trial, rng))
    page.goto(live_server.url + "/study/journey/")
    page.wait_for_url("**/study/journey/waiting/")
    assert page.get_by_text("Session 1 is complete").is_visible()
    countdown = page.locator("#countdown")
    countdown.wait_for()
    assert " h " in countdown.inner_text()
