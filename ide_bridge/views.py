"""The participant's browser workspace and its JSON endpoints.

Views parse, authorise through ``study.access`` (someone else's trial is a 404, exactly like a
missing one), call a service and render. The JSON endpoints answer errors as
``{"error": "..."}``: 400 bad JSON, 401 signed out, 404 not yours, 409 trial closed, 413 code
too large, 429 a test run already going. All POSTs need the CSRF token in ``X-CSRFToken``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from functools import wraps
from typing import Any

from asgiref.sync import sync_to_async
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from ide_bridge import workspace
from ide_bridge.environments import EnvironmentUnavailable, get_environment
from study import participation
from study.access import get_participant, get_trial_for_participant
from study.flow import Page
from study.models import Trial, User
from study.views import current_step

OPEN = (Trial.Status.PENDING, Trial.Status.ACTIVE)
SIGNED_OUT = "You are signed out. Open your personal study link again to continue."
TOO_LARGE = f"solution.py is larger than the {participation.MAX_DRAFT_BYTES // 1024} KiB limit."


def _error(message: str, http_status: int, **extra: Any) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=http_status)


class BadBody(Exception):
    def __init__(self, response: JsonResponse) -> None:
        super().__init__(response.content.decode())
        self.response = response


def _code(request: HttpRequest) -> str:
    """The ``code`` field of a JSON body ``{"code": "..."}``."""
    try:
        data = json.loads(request.body or b"null")
    except RequestDataTooBig:
        raise BadBody(_error(TOO_LARGE, 413)) from None
    except (ValueError, UnicodeDecodeError):
        raise BadBody(_error("The request body is not valid JSON.", 400)) from None
    if not isinstance(data, dict) or not isinstance(data.get("code"), str):
        raise BadBody(_error('Expected a JSON object {"code": "..."}.', 400))
    code: str = data["code"]
    if len(code.encode()) > participation.MAX_DRAFT_BYTES:
        raise BadBody(_error(TOO_LARGE, 413))
    return code


FEEDBACK_ONLY = (
    "In this condition the code changes only through the assistant's revisions: write your "
    "feedback in the assistant panel."
)


def _check_editable(trial: Trial, code: str) -> None:
    """The feedback-only arm's read-only editor, enforced on the server as well."""
    if participation.arm_config(trial).get("ai_mode") == "feedback" and (
        code != workspace.solution_text(trial)
    ):
        raise BadBody(_error(FEEDBACK_ONLY, 403))


def _load_trial(user: User | AnonymousUser, trial_id: int) -> Trial:
    participant = get_participant(user)
    trial = get_trial_for_participant(participant, trial_id)
    trial.participant = participant  # saves a query in arm_config()
    return trial


JsonView = Callable[[HttpRequest, Trial], JsonResponse]


def trial_json(view: JsonView) -> Callable[[HttpRequest, int], JsonResponse]:
    """Authorise a JSON endpoint: 401 when signed out, 404 for a trial that is not yours,
    400/413 for a bad body (raised as ``BadBody``)."""

    @wraps(view)
    def wrapper(request: HttpRequest, trial_id: int) -> JsonResponse:
        if not request.user.is_authenticated:
            return _error(SIGNED_OUT, 401)
        try:
            trial = _load_trial(request.user, trial_id)
            return view(request, trial)
        except Http404:
            return _error("Not found.", 404)
        except BadBody as exc:
            return exc.response

    return wrapper


# --- The page ---------------------------------------------------------------------------------
@login_required(login_url="/")
@require_GET
def workspace_page(request: HttpRequest, trial_id: int) -> HttpResponse:
    """The trial's workspace. Opening it starts the trial (once); a closed trial shows its
    submitted state with grading progress and, when released, the report."""
    trial = _load_trial(request.user, trial_id)
    participant = trial.participant
    if trial.status in OPEN:
        step = current_step(participant)  # also closes the trial if its time ran out
        trial.refresh_from_db(fields=["status", "deadline", "ended_at", "evaluation"])
        current = step.page == Page.TRIAL and step.trial is not None and step.trial.pk == trial.pk
        if trial.status in OPEN and not current:
            return redirect("study:next")
    arm = participation.arm_config(trial)
    if trial.status in OPEN:
        try:
            environment = get_environment(str(arm.get("ide", "browser")))
        except EnvironmentUnavailable as exc:
            context = {"participant": participant, "trial": trial, "unavailable": str(exc)}
            return render(request, "ide_bridge/workspace.html", context, status=503)
        if trial.status == Trial.Status.PENDING:
            try:
                trial = participation.start_trial(trial, timezone.now())
            except participation.SessionNotOpen:
                return redirect("study:next")
            trial.participant = participant
        environment.provision(trial)
    return render(request, "ide_bridge/workspace.html", _page_context(trial, arm))


def _page_urls(trial: Trial, ai_mode: str) -> dict[str, str]:
    names = ["autosave", "run", "submit", "state", "events"]
    if ai_mode != "none":
        names += ["ai_chat", "ai_complete", "ai_feedback", "ai_outcome"]
    urls = {}
    for name in names:
        try:  # the AI gateway and telemetry routes belong to other modules of this app
            urls[name] = reverse(f"ide_bridge:{name}", args=[trial.pk])
        except NoReverseMatch:
            continue
    urls["status"] = reverse("study:trial_status", args=[trial.pk])
    urls["next"] = reverse("study:next")
    return urls


def _page_context(trial: Trial, arm: dict[str, Any]) -> dict[str, Any]:
    from ide_bridge.telemetry import issue_trial_token

    files = workspace.workspace_files(trial)
    now = timezone.now()
    ai_mode = str(arm.get("ai_mode", "none"))
    closed = trial.status not in OPEN
    return {
        "participant": trial.participant,
        "trial": trial,
        "arm": arm,
        "ai_mode": ai_mode,
        "ai_provider": arm.get("ai_provider", trial.arm.ai_provider),
        # For telemetry's pagehide beacon; issuing replaces the token of an earlier page load.
        "telemetry_token": "" if closed else issue_trial_token(trial),
        "files": files,
        "documents": [f for f in files if f.is_document],
        "files_payload": workspace.files_payload(files),
        "state": workspace.trial_state(trial, now),
        "urls": _page_urls(trial, ai_mode),
        "closed": closed,
        "read_only": workspace.editor_read_only(trial),
    }


# --- JSON endpoints ---------------------------------------------------------------------------
@require_POST
@trial_json
def autosave(request: HttpRequest, trial: Trial) -> JsonResponse:
    code = _code(request)
    _check_editable(trial, code)
    try:
        saved = participation.save_draft(trial, code, timezone.now())
    except participation.TrialClosed as exc:
        trial.refresh_from_db(fields=["status"])
        return _error(str(exc), 409, status=trial.status)
    except ValueError as exc:
        return _error(str(exc), 413)
    assert saved.draft_saved_at is not None
    return JsonResponse({"saved_at": saved.draft_saved_at.isoformat(), "status": saved.status})


@require_GET
@trial_json
def state(request: HttpRequest, trial: Trial) -> JsonResponse:
    """For a reload or a second device; past the deadline the trial is closed here (its last
    saved code is submitted), so a page whose countdown reached zero sees the closed state."""
    now = timezone.now()
    if trial.status == Trial.Status.ACTIVE and participation.close_overdue_trial(trial, now):
        trial.refresh_from_db()
    return JsonResponse(workspace.trial_state(trial, now))


@require_POST
@trial_json
def submit(request: HttpRequest, trial: Trial) -> JsonResponse:
    """Final submission of the code in the editor (saved first, so the draft matches)."""
    code = _code(request)
    _check_editable(trial, code)
    now = timezone.now()
    try:
        environment = get_environment(str(participation.arm_config(trial).get("ide")))
    except EnvironmentUnavailable as exc:
        return _error(str(exc), 409, status=trial.status)
    try:
        if trial.status == Trial.Status.ACTIVE:
            trial = participation.save_draft(trial, code, now)
        source = environment.collect(trial)[workspace.SOLUTION]
        trial = participation.submit_trial(trial, source, now)
    except participation.TrialClosed as exc:
        trial.refresh_from_db(fields=["status"])
        return _error(str(exc), 409, status=trial.status)
    except ValueError as exc:
        return _error(str(exc), 413)
    environment.teardown(trial)
    return JsonResponse(
        {
            "status": "submitted",
            "trial_status": trial.status,
            "status_url": reverse("study:trial_status", args=[trial.pk]),
        }
    )


def _save_for_run(user: User | AnonymousUser, trial_id: int, code: str) -> Trial:
    trial = _load_trial(user, trial_id)
    _check_editable(trial, code)
    return participation.save_draft(trial, code, timezone.now())


@require_POST
async def run_tests(request: HttpRequest, trial_id: int) -> JsonResponse:
    """Autosave, then run the visible tests in the sandbox. Async, so a run of up to ~20 s
    waits in a worker thread instead of blocking the server's thread for sync views."""
    user = await request.auser()
    if not user.is_authenticated:
        return _error(SIGNED_OUT, 401)
    try:
        code = _code(request)
        trial = await sync_to_async(_save_for_run)(user, trial_id, code)
    except BadBody as exc:
        return exc.response
    except Http404:
        return _error("Not found.", 404)
    except participation.TrialClosed as exc:
        return _error(str(exc), 409)
    except ValueError as exc:
        return _error(str(exc), 413)
    try:
        async with workspace.run_lock(trial.pk):
            result = await asyncio.to_thread(workspace.run_visible_tests, trial, code)
    except workspace.RunInProgress as exc:
        return _error(str(exc), 429)
    assert trial.draft_saved_at is not None
    result["saved_at"] = trial.draft_saved_at.isoformat()
    return JsonResponse(result, status=503 if result["status"] == "unavailable" else 200)
