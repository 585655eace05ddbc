"""The participant's browser workspace and its JSON endpoints.

Views parse, authorise through ``study.access`` (someone else's trial is a 404, exactly like a
missing one), call a service and render; GET only reads. A pending trial's page offers "Start
task", whose POST (``start``) starts the clock. The JSON endpoints answer errors as
``{"error": "..."}`` (``ide_bridge.http``): 400 bad JSON, 401 signed out, 403 the arm does not
allow editing (feedback-only) or takes no code from the editor (its submission channels), 404
not yours, 409 trial closed, 413 code too large, 429 a test run already going. All POSTs need
the CSRF token in ``X-CSRFToken``.

Bodies carry files: ``{"files": {"<editable path>": "<text>", ...}}``. Autosave sends only the
file that changed (the others keep their saved text); run and submit send what changed since
the last save and act on the whole editable set. A task with one editable file also takes the
shorthand ``{"code": "..."}``. A path that is not an editable file of the task is a 400 with a
sentence, a file over the size limit a 413.
"""

from __future__ import annotations

import asyncio
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from evaluation.submissions import MAX_TOTAL_BYTES
from ide_bridge.http import (
    SIGNED_OUT,
    RequestError,
    async_participant_endpoint,
    json_error,
    participant_endpoint,
    read_json_object,
)
from ide_bridge.telemetry.services import page_token
from ide_bridge.workspace import services as workspace
from ide_bridge.workspace.environments import EnvironmentUnavailable, get_environment
from study.access import get_own_trial
from study.journey.routing import current_step, is_current_trial
from study.journey.services import SessionNotOpen
from study.models import Arm, Trial
from study.trials import services as trials
from study.trials.files import FilesRefused, FilesTooLarge, current_files, editable_paths

OPEN = (Trial.Status.PENDING, Trial.Status.ACTIVE)
TOO_LARGE = f"Your files together are larger than the {MAX_TOTAL_BYTES // 1024} KiB limit."
FEEDBACK_ONLY = (
    "In this condition the code changes only through the assistant's revisions: write your "
    "feedback in the assistant panel."
)
EXPECTED = 'Expected a JSON object {"files": {"<path>": "<text>"}}.'
# The body carries the files plus JSON quoting (every character may need escaping).
MAX_BODY_BYTES = 6 * MAX_TOTAL_BYTES + 1024


def _files(request: HttpRequest, trial: Trial) -> dict[str, str]:
    """The ``files`` of a JSON body (``{"code": ...}`` for a one-file task). The paths and
    sizes are checked by the study's services (400 and 413 with their sentences)."""
    data = read_json_object(request, max_bytes=MAX_BODY_BYTES, too_large=TOO_LARGE)
    files = data.get("files")
    if files is None and "code" in data:
        editable = editable_paths(trial)
        if len(editable) != 1:
            raise RequestError(
                f"This task has several editable files; send them as {EXPECTED[18:-1]}.", 400
            )
        files = {editable[0]: data["code"]}
    if not isinstance(files, dict) or not all(isinstance(v, str) for v in files.values()):
        raise RequestError(EXPECTED, 400)
    return files


def _check_editable(trial: Trial, files: dict[str, str]) -> None:
    """The editor is one of the arm's submission channels (autosaved code is submitted at the
    deadline, so autosave and test runs count too), and the feedback-only arm's editor is
    read-only: both enforced on the server."""
    try:
        trials.check_channel(trial, Arm.Channel.EDITOR)
    except trials.ChannelNotAllowed as exc:
        raise RequestError(str(exc), 403) from None
    if trials.arm_config(trial).get("ai_mode") == "feedback":
        current = current_files(trial)
        if any(path in current and text != current[path] for path, text in files.items()):
            raise RequestError(FEEDBACK_ONLY, 403)


def _refused(exc: FilesRefused) -> JsonResponse:
    return json_error(str(exc), 413 if isinstance(exc, FilesTooLarge) else 400)


def _closed(trial: Trial, exc: trials.TrialClosed) -> JsonResponse:
    trial.refresh_from_db(fields=["status"])
    return json_error(str(exc), 409, status=trial.status)


# --- The page ---------------------------------------------------------------------------------
@login_required(login_url="/")
@require_GET
def workspace_page(request: HttpRequest, trial_id: int) -> HttpResponse:
    """The trial's workspace: for a pending trial its "Start task" page; for a closed one its
    submitted state with grading progress and, when released, the report."""
    trial = get_own_trial(request.user, trial_id)
    participant = trial.participant
    if trial.status in OPEN and not is_current_trial(current_step(participant), trial):
        return redirect("study:next")
    arm = trials.arm_config(trial)
    if trial.status in OPEN:
        try:
            get_environment(str(arm.get("ide", "browser")))
        except EnvironmentUnavailable as exc:
            context = {"participant": participant, "trial": trial, "unavailable": str(exc)}
            return render(request, "ide_bridge/workspace.html", context, status=503)
    if trial.status == Trial.Status.PENDING:
        context = {"participant": participant, "trial": trial, "arm": arm}
        return render(request, "ide_bridge/start.html", context)
    return render(request, "ide_bridge/workspace.html", _page_context(trial, arm))


@login_required(login_url="/")
@require_POST
def start(request: HttpRequest, trial_id: int) -> HttpResponse:
    """Start the trial's clock and prepare its environment (a second click is harmless)."""
    trial = get_own_trial(request.user, trial_id)
    if trial.status != Trial.Status.PENDING:
        return redirect("ide_bridge:workspace", trial_id=trial.pk)
    if not is_current_trial(current_step(trial.participant), trial):
        return redirect("study:next")
    try:
        environment = get_environment(str(trials.arm_config(trial).get("ide", "browser")))
    except EnvironmentUnavailable:
        return redirect("ide_bridge:workspace", trial_id=trial.pk)  # the page explains
    try:
        trial = trials.start_trial(trial, timezone.now())
    except SessionNotOpen:
        return redirect("study:next")
    environment.provision(trial)
    return redirect("ide_bridge:workspace", trial_id=trial.pk)


def _page_urls(trial: Trial, ai_mode: str) -> dict[str, str]:
    names = ["autosave", "run", "submit", "state", "close", "events"]  # + images, per file
    if ai_mode != "none":
        names += ["ai_chat", "ai_complete", "ai_feedback", "ai_outcome"]
    urls = {name: reverse(f"ide_bridge:{name}", args=[trial.pk]) for name in names}
    urls["status"] = reverse("study:trial_status", args=[trial.pk])
    urls["report"] = reverse("study:trial_report_fragment", args=[trial.pk])
    urls["next"] = reverse("study:next")
    return urls


def _page_context(trial: Trial, arm: dict[str, Any]) -> dict[str, Any]:
    files = workspace.workspace_files(trial)
    editable = list(editable_paths(trial))
    ai_mode = str(arm.get("ai_mode", "none"))
    closed = trial.status not in OPEN
    return {
        "participant": trial.participant,
        "trial": trial,
        "arm": arm,
        "ai_mode": ai_mode,
        "ai_provider": arm.get("ai_provider", trial.arm.ai_provider),
        # For telemetry's pagehide beacon (derived, not stored: every tab gets the same one).
        "telemetry_token": "" if closed else page_token(trial),
        "files": files,
        "tree": workspace.file_tree(files),
        "editable": editable,
        "first_editable": editable[0],
        "documents": [f for f in files if f.is_document],
        "files_payload": workspace.files_payload(files),
        "state": workspace.trial_state(trial, timezone.now()),
        "urls": _page_urls(trial, ai_mode),
        "closed": closed,
        "read_only": workspace.editor_read_only(trial),
    }


# --- JSON endpoints ---------------------------------------------------------------------------
@require_POST
@participant_endpoint
def autosave(request: HttpRequest, trial: Trial) -> JsonResponse:
    """Save the files sent (usually the one that changed); answers with the saved paths."""
    files = _files(request, trial)
    _check_editable(trial, files)
    try:
        saved = trials.save_draft(trial, files, timezone.now())
    except trials.TrialClosed as exc:
        return _closed(trial, exc)
    except FilesRefused as exc:
        return _refused(exc)
    assert saved.draft_saved_at is not None
    return JsonResponse(
        {
            "saved_at": saved.draft_saved_at.isoformat(),
            "status": saved.status,
            "saved": sorted(files),
        }
    )


@require_GET
def image(request: HttpRequest, trial_id: int, path: str) -> HttpResponse:
    """A participant-visible image of the trial's task (the instance's images and ``.svg``
    diagrams) for the viewer's ``<img>``; any other path is a 404, like another's trial."""
    if not request.user.is_authenticated:
        return json_error(SIGNED_OUT, 401)
    trial = get_own_trial(request.user, trial_id)  # 404 when not theirs
    found = workspace.image_file(trial, path)
    if found is None:
        raise Http404("no such image")
    body, content_type = found
    response = HttpResponse(body, content_type=content_type)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = workspace.IMAGE_CSP
    response["Cache-Control"] = "private, max-age=3600"
    return response


@require_GET
@participant_endpoint
def state(request: HttpRequest, trial: Trial) -> JsonResponse:
    """For a reload or a second device (reads only; see ``close`` for the deadline)."""
    return JsonResponse(workspace.trial_state(trial, timezone.now()))


@require_POST
@participant_endpoint
def close(request: HttpRequest, trial: Trial) -> JsonResponse:
    """Sent by the page when its countdown reaches zero: past the deadline the trial closes
    here (its last saved code is submitted) instead of waiting for the minute task. Before the
    deadline it changes nothing. Answers with the trial's state."""
    now = timezone.now()
    if trials.close_overdue_trial(trial, now):
        trial.refresh_from_db()
    return JsonResponse(workspace.trial_state(trial, now))


@require_POST
@participant_endpoint
def submit(request: HttpRequest, trial: Trial) -> JsonResponse:
    """Final submission of the editable files (those sent are saved first, so the draft
    matches; the whole editable set is submitted)."""
    files = _files(request, trial)
    _check_editable(trial, files)
    now = timezone.now()
    try:
        environment = get_environment(str(trials.arm_config(trial).get("ide")))
    except EnvironmentUnavailable as exc:
        return json_error(str(exc), 409, status=trial.status)
    try:
        if trial.status == Trial.Status.ACTIVE and files:
            trial = trials.save_draft(trial, files, now)
        collected = environment.collect(trial)
        trial = trials.submit_trial(trial, collected, now, channel=Arm.Channel.EDITOR)
    except trials.TrialClosed as exc:
        return _closed(trial, exc)
    except FilesRefused as exc:
        return _refused(exc)
    environment.teardown(trial)
    return JsonResponse(
        {
            "status": "submitted",
            "trial_status": trial.status,
            "status_url": reverse("study:trial_status", args=[trial.pk]),
        }
    )


def _save_for_run(trial: Trial, files: dict[str, str]) -> tuple[Trial, dict[str, str]]:
    """Save what was sent, then the whole editable set the tests run against."""
    _check_editable(trial, files)
    trial = trials.save_draft(trial, files, timezone.now())
    return trial, current_files(trial)


@require_POST
@async_participant_endpoint
async def run_tests(request: HttpRequest, trial: Trial) -> JsonResponse:
    """Autosave, then run the visible tests in the sandbox. Async, so a run of up to ~20 s
    waits in a worker thread instead of blocking the server's thread for sync views."""
    files = await sync_to_async(_files)(request, trial)
    try:
        trial, everything = await sync_to_async(_save_for_run)(trial, files)
    except trials.TrialClosed as exc:
        return json_error(str(exc), 409)
    except FilesRefused as exc:
        return _refused(exc)
    try:
        async with workspace.run_lock(trial.pk):
            result = await asyncio.to_thread(workspace.run_visible_tests, trial, everything)
    except workspace.RunInProgress as exc:
        return json_error(str(exc), 429)
    assert trial.draft_saved_at is not None
    result["saved_at"] = trial.draft_saved_at.isoformat()
    return JsonResponse(result, status=503 if result["status"] == "unavailable" else 200)
