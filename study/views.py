"""Participant-facing views of the study flow, and the researcher start page.

Each view parses the request, fetches objects through ``study.access``, calls a service and
renders. ``next_step`` decides where a participant belongs, so every page can be reloaded.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from evaluation.report import participant_view
from study import participation
from study.access import get_participant, get_trial_for_participant
from study.flow import Page, Step, next_step
from study.models import Participant, Trial

PAGE_URLS = {
    Page.WELCOME: "study:welcome",
    Page.CONSENT: "study:consent",
    Page.SCREENING: "study:screening",
    Page.WAITING: "study:waiting",
    Page.SESSION_MISSED: "study:waiting",
    Page.POST_STUDY: "study:post_study",
    Page.COMPLETE: "study:done",
    Page.DECLINED: "study:done",
    Page.WITHDRAWN: "study:done",
    Page.EXCLUDED: "study:done",
}


def current_step(participant: Participant) -> Step:
    from study.consent import needs_consent

    now = timezone.now()
    for trial in participant.trials.filter(status=Trial.Status.ACTIVE, deadline__lt=now):
        participation.close_overdue_trial(trial, now)
    if participant.stage == Participant.Stage.IN_SESSION:
        participation.advance_session(participant, now)
        participant.refresh_from_db()
    consent_due = participant.stage != Participant.Stage.INVITED and needs_consent(participant)
    return next_step(participant, now, needs_consent=consent_due)


def step_url(step: Step) -> str:
    if step.page == Page.TRIAL and step.trial is not None:
        return trial_url(step.trial)
    if step.page == Page.POST_TRIAL and step.trial is not None:
        return reverse("study:post_trial", args=[step.trial.pk])
    return reverse(PAGE_URLS[step.page])


def trial_url(trial: Trial) -> str:
    """The trial's workspace: the in-browser IDE (``ide_bridge``), or the upload page when
    that app is not installed. Resolved by URL name, so this app never imports it."""
    try:
        return reverse("ide_bridge:workspace", args=[trial.pk])
    except NoReverseMatch:
        return reverse("study:trial", args=[trial.pk])


def _participant(request: HttpRequest) -> Participant:
    return get_participant(request.user)


def _redirect_unless(participant: Participant, *pages: Page) -> HttpResponse | None:
    step = current_step(participant)
    if step.page in pages:
        return None
    return redirect(step_url(step))


@login_required(login_url="/")
def next_page(request: HttpRequest) -> HttpResponse:
    return redirect(step_url(current_step(_participant(request))))


@login_required(login_url="/")
def welcome(request: HttpRequest) -> HttpResponse:
    participant = _participant(request)
    if (response := _redirect_unless(participant, Page.WELCOME)) is not None:
        return response
    return render(
        request, "study/welcome.html", {"participant": participant, "study": participant.study}
    )


@login_required(login_url="/")
@require_http_methods(["GET", "POST"])
def consent(request: HttpRequest) -> HttpResponse:
    from study.consent import ConsentDecisionForm, render_consent

    participant = _participant(request)
    if (response := _redirect_unless(participant, Page.WELCOME, Page.CONSENT)) is not None:
        return response
    form_version = participant.study.consent_form
    if form_version is None:
        raise Http404("this study has no consent form yet")
    form = ConsentDecisionForm(form_version, request.POST or None)
    if request.method == "POST":
        agree = request.POST.get("decision") == "agree"
        if not agree or form.is_valid():
            data = form.cleaned_data if agree else {}
            try:
                participation.give_consent(
                    participant,
                    agree=agree,
                    checkboxes={k[3:]: bool(v) for k, v in data.items() if k.startswith("cb_")},
                    typed_name=data.get("typed_name"),
                )
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                return redirect("study:next")
    return render(
        request,
        "study/consent.html",
        {
            "form": form,
            "consent_form": form_version,
            "consent_html": render_consent(form_version),
            "action_url": reverse("study:consent"),
            "step_title": "Consent",
        },
    )


def _questionnaire_page(
    request: HttpRequest, version: Any, title: str, action: str, save: Any
) -> HttpResponse:
    from study.questionnaires import build_form

    form = build_form(version, request.POST or None)
    if request.method == "POST" and form.is_valid():
        save(form.cleaned_data)
        return redirect("study:next")
    return render(
        request,
        "study/questionnaire_form.html",
        {
            "form": form,
            "questionnaire_version": version,
            "action_url": action,
            "step_title": title,
        },
    )


@login_required(login_url="/")
@require_http_methods(["GET", "POST"])
def screening(request: HttpRequest) -> HttpResponse:
    participant = _participant(request)
    if (response := _redirect_unless(participant, Page.SCREENING)) is not None:
        return response
    return _questionnaire_page(
        request,
        participant.study.screening,
        "About you",
        reverse("study:screening"),
        lambda data: participation.submit_screening(participant, data),
    )


@login_required(login_url="/")
@require_http_methods(["GET", "POST"])
def trial(request: HttpRequest, trial_id: int) -> HttpResponse:
    participant = _participant(request)
    trial = get_trial_for_participant(participant, trial_id)
    step = current_step(participant)
    if trial.status in (Trial.Status.PENDING, Trial.Status.ACTIVE) and not (
        step.page == Page.TRIAL and step.trial and step.trial.pk == trial.pk
    ):
        return redirect(step_url(step))
    now = timezone.now()
    if trial.status == Trial.Status.PENDING:
        trial = participation.start_trial(trial, now)
    error = ""
    if request.method == "POST":
        upload = request.FILES.get("solution")
        if upload is None:
            error = "Choose your solution.py file before submitting."
        elif upload.size is not None and upload.size > 256 * 1024:
            error = "solution.py is larger than the 256 KiB limit."
        else:
            try:
                participation.submit_trial(trial, upload.read(), timezone.now())
            except participation.TrialClosed as exc:
                error = str(exc)
            else:
                return redirect("study:trial", trial_id=trial.pk)
        trial.refresh_from_db()
    return render(
        request, "study/trial.html", _trial_context(trial, error), status=400 if error else 200
    )


def _trial_context(trial: Trial, error: str) -> dict[str, Any]:
    from evaluation.instances import get_instance
    from study.markdown import render_markdown

    instance = get_instance(trial.template_slug, trial.seed)
    files = sorted(name for name in instance.participant_files if name != "README.md")
    return {
        "trial": trial,
        "arm": participation.arm_config(trial),
        "readme_html": render_markdown(instance.participant_files["README.md"]),
        "files": files,
        "error": error,
        "deadline_iso": trial.deadline.isoformat() if trial.deadline else "",
    }


@login_required(login_url="/")
def trial_file(request: HttpRequest, trial_id: int, name: str) -> HttpResponse:
    from evaluation.instances import get_instance

    participant = _participant(request)
    trial = get_trial_for_participant(participant, trial_id)
    files = get_instance(trial.template_slug, trial.seed).participant_files
    if name not in files:  # only the participant files of this instance, never hidden ones
        raise Http404("no such file")
    response = HttpResponse(files[name], content_type="text/plain; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required(login_url="/")
def trial_status(request: HttpRequest, trial_id: int) -> JsonResponse:
    """Grading progress and, when the release policy allows, the participant's report."""
    participant = _participant(request)
    trial = get_trial_for_participant(participant, trial_id)
    evaluation = trial.evaluation
    body: dict[str, Any] = {
        "trial": trial.pk,
        "status": trial.status,
        "deadline": trial.deadline.isoformat() if trial.deadline else None,
        "server_time": timezone.now().isoformat(),
        "grading": None,
        "report": None,
    }
    if evaluation is not None:
        body["grading"] = {
            "status": evaluation.status,
            "done": evaluation.tests_done,
            "total": evaluation.tests_total,
        }
        if participation.report_released(trial, timezone.now()) and evaluation.report:
            body["report"] = participant_view(evaluation.report)
    return JsonResponse(body)


@login_required(login_url="/")
@require_http_methods(["GET", "POST"])
def post_trial(request: HttpRequest, trial_id: int) -> HttpResponse:
    participant = _participant(request)
    trial = get_trial_for_participant(participant, trial_id)
    step = current_step(participant)
    if step.page != Page.POST_TRIAL or step.trial is None or step.trial.pk != trial.pk:
        return redirect(step_url(step))
    return _questionnaire_page(
        request,
        participant.study.post_trial,
        "About the task you just did",
        reverse("study:post_trial", args=[trial.pk]),
        lambda data: participation.submit_post_trial(participant, trial, data),
    )


@login_required(login_url="/")
@require_http_methods(["GET", "POST"])
def waiting(request: HttpRequest) -> HttpResponse:
    participant = _participant(request)
    if (response := _redirect_unless(participant, Page.WAITING, Page.SESSION_MISSED)) is not None:
        return response
    now = timezone.now()
    opens, closes = participant.next_session_opens_at, participant.next_session_closes_at
    state = "early" if opens and now < opens else ("missed" if closes and now > closes else "open")
    if request.method == "POST" and state == "open":
        participation.start_session(participant, now)
        return redirect("study:next")
    return render(
        request,
        "study/waiting.html",
        {
            "participant": participant,
            "state": state,
            "opens_at": opens,
            "closes_at": closes,
            "opens_iso": opens.isoformat() if opens else "",
            "now": now,
        },
    )


@login_required(login_url="/")
@require_http_methods(["GET", "POST"])
def post_study(request: HttpRequest) -> HttpResponse:
    participant = _participant(request)
    if (response := _redirect_unless(participant, Page.POST_STUDY)) is not None:
        return response
    return _questionnaire_page(
        request,
        participant.study.post_study,
        "Looking back on the study",
        reverse("study:post_study"),
        lambda data: participation.submit_post_study(participant, data),
    )


@login_required(login_url="/")
def done(request: HttpRequest) -> HttpResponse:
    participant = _participant(request)
    step = current_step(participant)
    if step.page not in (Page.COMPLETE, Page.DECLINED, Page.WITHDRAWN, Page.EXCLUDED):
        return redirect(step_url(step))
    trials = list(participant.trials.select_related("evaluation").order_by("period"))
    now = timezone.now()
    reports = [
        (
            t,
            participant_view(t.evaluation.report)
            if t.evaluation and t.evaluation.report and participation.report_released(t, now)
            else None,
        )
        for t in trials
    ]
    return render(
        request,
        "study/done.html",
        {"participant": participant, "page": step.page, "reports": reports},
    )


@login_required(login_url="/")
@require_http_methods(["GET", "POST"])
def withdraw(request: HttpRequest) -> HttpResponse:
    participant = _participant(request)
    if not participant.is_active:
        return redirect("study:done")
    if request.method == "POST":
        participation.withdraw(participant, channel="participant button")
        return redirect("study:done")
    return render(request, "study/withdraw.html", {"participant": participant})


@login_required
def researcher_home(request: HttpRequest) -> HttpResponse:
    """The researcher's start page: configure studies, watch them, secure the account."""
    if not request.user.is_staff:
        raise PermissionDenied("This page is for researchers.")
    from study.access import studies_for_researcher

    studies = studies_for_researcher(request.user)
    return render(request, "study/researcher_home.html", {"studies": studies})
