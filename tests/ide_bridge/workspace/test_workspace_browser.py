"""The workspace in headless chromium: a participant types code into Monaco, runs the visible
tests, reloads (code and timer come back), submits through the confirm dialog, watches the
grading progress bar and reads the report. On the multi-file project task, the file tree
folds, a second editable file is edited, autosaved and restored on reload, and the diagram
opens in the image viewer. Grading runs eagerly here (the test settings), so
that one submission calibrates and grades for real in the real sandbox (~20-60 s). A second
test drives the countdown: warnings at 10 and 2 minutes, then the automatic submission."""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache
from django.utils import timezone

from evaluation.instances import get_instance
from evaluation.services import record_instance
from study.enrolment.accounts import create_participants
from study.models import Arm, Trial
from tests.factories import ResearcherFactory
from tests.ide_bridge.workspace.workspace_helpers import on_project
from tests.study.helpers import consent_and_screen, grading_queued, journey_study

# A timeout here ends the run (thread method): SIGALRM inside Playwright's sync API leaves
# the main thread's event loop broken, and every later test would fail with it.
pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(method="thread"),
]

TEMPLATE = "sde-binary-palindromes"
MONACO_LOADER = Path(django_settings.BASE_DIR) / "static" / "vendor" / "monaco" / "vs" / "loader.js"


def _required(flag: str) -> bool:
    return os.environ.get(flag, "") in {"1", "true", "yes"}


@pytest.fixture
def ready(settings: Any) -> None:
    """Monaco installed into static/vendor and the bwrap sandbox working, or a skip."""
    if not MONACO_LOADER.exists():
        message = 'Monaco is not installed: run "npm ci && npm run vendor"'
        if _required("REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    from evaluation.sandbox import SandboxUnavailable, get_sandbox

    try:
        works, detail = get_sandbox("bwrap").self_test()
    except SandboxUnavailable as exc:
        works, detail = False, str(exc)
    if not works:
        if _required("REQUIRE_SERVICES"):
            pytest.fail(f"the bwrap sandbox is required (REQUIRE_SERVICES=1): {detail}")
        pytest.skip(f"the bwrap sandbox cannot run here: {detail}")
    settings.EVALUATION_SANDBOX_BACKEND = "bwrap"
    cache.clear()  # personal-link logins are rate-limited per address


def assigned_participant() -> tuple[str, Trial]:
    """A participant prepared on the server up to ASSIGNED (consent and screening are covered
    by the study journey tests), whose first trial is the easy template without an assistant."""
    study = journey_study()
    Arm.objects.filter(study=study).update(ai_mode=Arm.AIMode.NONE)
    account = create_participants(study, 1, created_by=ResearcherFactory.create())[0]
    participant = account.participant
    consent_and_screen(participant, seed=5, track_preference="SDE")
    trial = participant.trials.order_by("period").first()
    assert trial is not None
    if trial.template_slug != TEMPLATE:  # the quickest template to calibrate and grade
        row = record_instance(get_instance(TEMPLATE, trial.seed))
        Trial.objects.filter(pk=trial.pk).update(template_slug=TEMPLATE, instance=row)
        trial.refresh_from_db()
    return account.login_path, trial


def open_workspace(page: Any, url: str, trial: Trial) -> None:
    """Follow the personal link into the trial's workspace and wait for Monaco."""
    page.goto(url)
    page.get_by_role("button", name="Continue").click()
    page.wait_for_url(f"**/ide/workspace/{trial.pk}/")
    page.get_by_role("button", name="Start task").click()
    wait_for_editor(page)


def mute_beacon(page: Any) -> None:
    """Without its token, telemetry keeps unsent events in localStorage instead of beaconing
    them at pagehide (telemetry has its own tests). A beacon sent as the test ends could reach
    the live server after the test database is gone."""
    page.evaluate("() => { delete document.getElementById('workspace').dataset.telemetryToken; }")


def leave(page: Any) -> None:
    """Leave the workspace while the test database still exists."""
    mute_beacon(page)
    page.goto("about:blank")


def editor_value(page: Any) -> str:
    return str(page.evaluate("() => window.haiEditor.getValue()"))


def wait_for_editor(page: Any) -> None:
    page.wait_for_function("() => window.haiEditor && window.haiEditorReady", timeout=30_000)
    page.locator("#editor .view-lines").wait_for()


@pytest.mark.usefixtures("ready")
@pytest.mark.timeout(240, method="thread")  # grades a submission for real (~55 s)
def test_type_run_reload_submit_and_see_the_report(live_server: Any, page: Any) -> None:
    from playwright.sync_api import expect

    login_path, trial = assigned_participant()
    instance = get_instance(trial.template_slug, trial.seed)

    open_workspace(page, live_server.url + login_path, trial)
    expect(page.get_by_text("Task 1").first).to_be_visible()
    assert "NotImplementedError" in editor_value(page)  # the starter
    expect(page.locator("#doc-panel")).to_contain_text(instance.context.get("company", ""))

    # Type at the end of the starter, then run the visible tests: they fail.
    page.locator("#editor .view-lines").click()
    page.keyboard.press("Control+End")
    page.keyboard.type("# first attempt")
    assert editor_value(page).endswith("# first attempt")
    expect(page.locator("#save-status")).to_contain_text("Saved", timeout=10_000)
    page.get_by_role("button", name="Run tests").click()
    expect(page.locator("#console")).to_contain_text("NotImplementedError", timeout=30_000)
    expect(page.locator("#run-summary")).to_contain_text("errors")

    # A read-only file opens in the viewer, then back to solution.py.
    page.locator(".ws-file[data-file='test_visible.py']").click()
    expect(page.locator("#viewer")).to_be_visible()
    expect(page.locator("#editor-mode")).to_be_visible()
    page.locator(".ws-file[data-file='solution.py']").click()
    expect(page.locator("#editor")).to_be_visible()

    # A working solution (pasted, as from another editor), finished by typing: tests pass.
    page.evaluate(
        "(code) => window.haiEditor.setValue(code)", instance.references["efficient"]["solution.py"]
    )
    page.locator("#editor .view-lines").click()
    page.keyboard.press("Control+End")
    page.keyboard.press("Enter")
    page.keyboard.type("# reviewed")
    code = editor_value(page)
    assert code.rstrip().endswith("# reviewed")
    # Let the autosave land first: the test server shares one SQLite connection between its
    # request threads, so two overlapping writes lock each other there (not on PostgreSQL).
    expect(page.locator("#save-status")).to_contain_text("Saved", timeout=10_000)
    page.get_by_role("button", name="Run tests").click()
    expect(page.locator("#run-summary")).to_contain_text("tests passed", timeout=30_000)
    expect(page.locator("#console")).to_contain_text("OK")
    trial.refresh_from_db()
    assert trial.draft_files == {"solution.py": code}  # the run saved it on the server

    # Reload: the same code and a running timer come back from the server.
    page.reload()
    wait_for_editor(page)
    assert editor_value(page) == code
    expect(page.locator("#time-left")).to_have_text(re.compile(r"^\d+:\d\d$"))
    left = page.locator("#time-left").inner_text()
    assert 55 <= int(left.split(":")[0]) <= 60, left

    # Submit through the confirm dialog; the progress bar shows, then the report.
    page.get_by_role("button", name="Submit…").click()
    dialog = page.locator("#submit-modal")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Submit (final)").click()
    expect(page.locator("#grading")).to_be_visible()
    expect(page.locator("#grading-progress")).to_be_visible()
    expect(page.locator("#report")).to_contain_text("checks passed", timeout=240_000)
    # The report is the server's fragment (study/results/_report_fragment.html), not a copy
    # rebuilt in JavaScript: the same body as the report page, without its plot.
    expect(page.locator("#report")).to_contain_text("Tests you could see")
    expect(page.locator("#report .plotly-figure")).to_have_count(0)
    expect(page.locator("#report").get_by_role("link", name="Open the full report")).to_be_visible()
    expect(page.locator("#grading-text")).to_have_text("Graded. Your report:")
    expect(page.locator("#grading-bar")).to_have_attribute("style", re.compile("width: 100%"))
    expect(page.get_by_role("button", name="Run tests")).to_be_disabled()
    assert page.evaluate(
        "() => window.haiEditor.getOption(window.monaco.editor.EditorOption.readOnly)"
    )

    trial.refresh_from_db()
    assert trial.status == Trial.Status.SUBMITTED
    assert trial.submission is not None
    assert trial.submission.files == {"solution.py": code}
    assert trial.evaluation is not None
    assert trial.evaluation.status == "done"

    # The closed trial, reopened, shows the graded state again (no editing, no timer).
    page.reload()
    expect(page.locator("#report")).to_contain_text("checks passed", timeout=30_000)
    expect(page.locator("#timer")).to_be_hidden()
    mute_beacon(page)
    page.get_by_role("link", name="Continue").click()
    page.wait_for_url(f"**/study/questionnaires/post-trial/{trial.pk}/")


@pytest.mark.usefixtures("ready")
def test_countdown_warns_then_the_deadline_submits_the_last_saved_code(
    live_server: Any, page: Any
) -> None:
    from playwright.sync_api import expect

    login_path, trial = assigned_participant()
    open_workspace(page, live_server.url + login_path, trial)
    page.locator("#editor .view-lines").click()
    page.keyboard.press("Control+End")
    page.keyboard.type("# saved before the deadline")
    expect(page.locator("#save-status")).to_contain_text("Saved", timeout=10_000)
    code = editor_value(page)

    def deadline_in(seconds: float) -> None:
        deadline = timezone.now() + timedelta(seconds=seconds)
        Trial.objects.filter(pk=trial.pk).update(deadline=deadline)
        page.reload()
        wait_for_editor(page)

    deadline_in(9 * 60 + 50)
    expect(page.locator("#time-warning")).to_contain_text("10 minutes left")
    deadline_in(100)
    expect(page.locator("#time-warning")).to_contain_text("2 minutes left")
    expect(page.locator("#timer")).to_have_class(re.compile("ws-timer-danger"))

    with grading_queued():
        deadline_in(4)
        expect(page.locator("#grading-title")).to_contain_text("Time is up", timeout=30_000)
        expect(page.locator("#grading-text")).to_contain_text("grader")
    expect(page.get_by_role("button", name="Run tests")).to_be_disabled()
    trial.refresh_from_db()
    assert trial.status == Trial.Status.EXPIRED
    assert trial.submission is not None
    assert trial.submission.files == {"solution.py": code}
    leave(page)


@pytest.fixture
def monaco_installed() -> None:
    """Monaco installed into static/vendor, or a skip (no sandbox needed: nothing is run)."""
    if not MONACO_LOADER.exists():
        message = 'Monaco is not installed: run "npm ci && npm run vendor"'
        if _required("REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    cache.clear()


@pytest.mark.usefixtures("monaco_installed")
@pytest.mark.timeout(120, method="thread")
def test_a_project_tree_edit_a_second_file_reload_and_open_the_diagram(
    live_server: Any, page: Any
) -> None:
    from playwright.sync_api import expect

    login_path, trial = assigned_participant()
    trial = on_project(trial)
    open_workspace(page, live_server.url + login_path, trial)
    starter = get_instance(trial.template_slug, trial.seed).starter_files()

    # The tree: README first, folders that fold, read-only files marked.
    tree = page.locator("#file-list")
    expect(tree.locator(".ws-file").first).to_have_attribute("data-file", "README.md")
    folder = tree.locator("details[data-folder='metering']")
    tariffs = tree.locator(".ws-file[data-file='metering/tariffs.py']")
    expect(tariffs).to_be_visible()
    folder.locator("> summary").click()
    expect(tariffs).to_be_hidden()
    folder.locator("> summary").click()
    expect(tariffs).to_be_visible()
    models_file = tree.locator(".ws-file[data-file='metering/models.py']")
    expect(models_file).to_contain_text("(read-only)")
    models_file.click()
    expect(page.locator("#viewer")).to_be_visible()
    expect(page.locator("#editor-mode")).to_have_text("read-only")

    # Edit the second editable file; only it is autosaved.
    tariffs.click()
    expect(page.locator("#editor")).to_be_visible()
    expect(page.locator("#editor-file")).to_have_text("metering/tariffs.py")
    assert editor_value(page) == starter["metering/tariffs.py"]
    page.locator("#editor .view-lines").click()
    page.keyboard.press("Control+End")
    page.keyboard.type("# cached per call")
    expect(tariffs.locator(".ws-unsaved")).to_be_visible()
    expect(page.locator("#save-status")).to_contain_text("Saved tariffs.py", timeout=10_000)
    expect(tariffs.locator(".ws-unsaved")).to_be_hidden()
    edited = editor_value(page)
    assert edited.endswith("# cached per call")
    trial.refresh_from_db()
    assert trial.draft_files == {"metering/tariffs.py": edited}

    # Reload: every file comes back from the server, the edited one included.
    page.reload()
    wait_for_editor(page)
    tree.locator(".ws-file[data-file='metering/tariffs.py']").click()
    assert editor_value(page) == edited
    tree.locator(".ws-file[data-file='metering/bills.py']").click()
    assert editor_value(page) == starter["metering/bills.py"]

    # The diagram opens in the image viewer, loaded from the image endpoint.
    tree.locator(".ws-file[data-file='diagrams/billing.svg']").click()
    image = page.locator("#image-view")
    expect(page.locator("#image-viewer")).to_be_visible()
    expect(page.locator("#editor")).to_be_hidden()
    expect(image).to_have_attribute("src", f"/ide/workspace/{trial.pk}/images/diagrams/billing.svg")
    page.wait_for_function("() => document.getElementById('image-view').naturalWidth > 0")
    leave(page)
