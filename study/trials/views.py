"""Trial pages of the study app: the plain upload page (for arms without the in-browser
workspace, and as a no-JavaScript fallback; only for arms whose submission channels include
it, others get a 403 with a message), the start of a trial, the participant's task
files and the grading status the pages poll.

Opening a page never starts a trial's clock: a pending trial shows its "Start task" form, whose
POST (``trial_start``) is the only way to start it here.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.files.uploadedfile import UploadedFile
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.datastructures import MultiValueDict
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from evaluation.instances import get_instance
from evaluation.submissions import MAX_FILE_BYTES
from study.access import get_participant, get_trial_for_participant
from study.instance_downloads import participant_file_download
from study.journey.routing import current_step, is_current_trial, step_url
from study.journey.services import SessionNotOpen
from study.markdown import render_markdown
from study.models import Arm, Trial
from study.results.release import released_view
from study.trials.files import FilesRefused, listing
from study.trials.services import (
    ChannelNotAllowed,
    TrialClosed,
    allowed_channels,
    arm_config,
    check_channel,
    start_trial,
    submit_trial,
)

MAX_UPLOAD_BYTES = MAX_FILE_BYTES
OPEN = (Trial.Status.PENDING, Trial.Status.ACTIVE)


def _own_trial(request: HttpRequest, trial_id: int) -> Trial:
    participant = get_participant(request.user)
    trial = get_trial_for_participant(participant, trial_id)
    trial.participant = participant  # already loaded with the study and the frozen snapshot
    return trial


@login_required(login_url="/")
@require_http_methods(["GET", "POST"])
def trial(request: HttpRequest, trial_id: int) -> HttpResponse:
    trial = _own_trial(request, trial_id)
    step = current_step(trial.participant)
    if trial.status in OPEN and not is_current_trial(step, trial):
        return redirect(step_url(step))
    error, status = "", 200
    if request.method == "POST":
        try:
            check_channel(trial, Arm.Channel.UPLOAD)
        except ChannelNotAllowed as exc:
            error, status = str(exc), 403
        else:
            error = _submit_upload(trial, request.FILES)
            if not error:
                return redirect("study:trial", trial_id=trial.pk)
            status = 400
        trial.refresh_from_db()
    return render(request, "study/trial.html", _trial_context(trial, error), status=status)


def upload_field(index: int) -> str:
    """The form field of the task's ``index``-th editable file (``file-0``, ``file-1``, ...)."""
    return f"file-{index}"


def _submit_upload(trial: Trial, uploads: MultiValueDict[str, UploadedFile]) -> str:
    """Submit the uploaded editable files (one field per editable path; all of them, so that
    a forgotten file is never replaced by its starter); the error to show, or "" once it is
    submitted."""
    editable = get_instance(trial.template_slug, trial.seed).editable
    files: dict[str, bytes] = {}
    for index, path in enumerate(editable):
        upload = uploads.get(upload_field(index))
        if upload is None:
            missing = [p for i, p in enumerate(editable) if upload_field(i) not in uploads]
            return f"Choose your {listing(missing)} before submitting."
        if upload.size is not None and upload.size > MAX_UPLOAD_BYTES:
            return f"{path} is larger than the {MAX_UPLOAD_BYTES // 1024} KiB limit."
        files[path] = upload.read()
    try:
        submit_trial(trial, files, timezone.now(), channel=Arm.Channel.UPLOAD)
    except (TrialClosed, FilesRefused) as exc:
        return str(exc)
    return ""


@login_required(login_url="/")
@require_POST
def trial_start(request: HttpRequest, trial_id: int) -> HttpResponse:
    """Start the trial's clock (a second click is harmless), then show its page."""
    trial = _own_trial(request, trial_id)
    if trial.status == Trial.Status.PENDING:
        if not is_current_trial(current_step(trial.participant), trial):
            return redirect("study:next")
        try:
            start_trial(trial, timezone.now())
        except SessionNotOpen:
            return redirect("study:next")
    return redirect("study:trial", trial_id=trial.pk)


def _trial_context(trial: Trial, error: str) -> dict[str, Any]:
    instance = get_instance(trial.template_slug, trial.seed)
    files = sorted(
        name for name in {*instance.participant_files, *instance.images} if name != "README.md"
    )
    uploads = [(upload_field(i), path) for i, path in enumerate(instance.editable)]
    return {
        "trial": trial,
        "arm": arm_config(trial),
        "readme_html": render_markdown(instance.participant_files["README.md"]),
        "files": files,
        "uploads": uploads,
        "error": error,
        "upload_allowed": Arm.Channel.UPLOAD in allowed_channels(trial),
        "deadline_iso": trial.deadline.isoformat() if trial.deadline else "",
    }


@login_required(login_url="/")
@require_GET
def trial_file(request: HttpRequest, trial_id: int, name: str) -> HttpResponse:
    """A participant file of the trial's instance (text, or an image as its bytes), as a
    download; never a hidden file."""
    trial = _own_trial(request, trial_id)
    instance = get_instance(trial.template_slug, trial.seed)
    return participant_file_download(instance, name)


@login_required(login_url="/")
@require_GET
def trial_status(request: HttpRequest, trial_id: int) -> JsonResponse:
    """Grading progress and, when the release policy allows, the participant's report."""
    trial = _own_trial(request, trial_id)
    evaluation = trial.evaluation
    now = timezone.now()
    body: dict[str, Any] = {
        "trial": trial.pk,
        "status": trial.status,
        "deadline": trial.deadline.isoformat() if trial.deadline else None,
        "server_time": now.isoformat(),
        "grading": None,
        "report": None,
    }
    if evaluation is not None:
        body["grading"] = {
            "status": evaluation.status,
            "done": evaluation.tests_done,
            "total": evaluation.tests_total,
        }
        body["report"] = released_view(trial, now)
    return JsonResponse(body)
