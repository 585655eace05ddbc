"""The questionnaire pages of the journey: screening, after each trial, after the study.

Each page shows only when the participant's current step is that questionnaire (otherwise it
redirects there); a valid POST stores the answers through ``services`` and moves on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from study.access import get_participant, get_trial_for_participant
from study.enrolment.services import submit_screening
from study.journey.flow import Page
from study.journey.routing import current_step, redirect_unless, step_url
from study.models import QuestionnaireVersion
from study.questionnaires.forms import build_form
from study.questionnaires.services import submit_post_study, submit_post_trial

Save = Callable[[Mapping[str, Any]], object]


def _page(
    request: HttpRequest, version: QuestionnaireVersion | None, title: str, action: str, save: Save
) -> HttpResponse:
    assert version is not None, "the study has no such questionnaire"
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
    participant = get_participant(request.user)
    if (response := redirect_unless(participant, Page.SCREENING)) is not None:
        return response
    return _page(
        request,
        participant.study.screening,
        "About you",
        reverse("study:screening"),
        lambda data: submit_screening(participant, data),
    )


@login_required(login_url="/")
@require_http_methods(["GET", "POST"])
def post_trial(request: HttpRequest, trial_id: int) -> HttpResponse:
    participant = get_participant(request.user)
    trial = get_trial_for_participant(participant, trial_id)
    step = current_step(participant)
    if step.page != Page.POST_TRIAL or step.trial is None or step.trial.pk != trial.pk:
        return redirect(step_url(step))
    return _page(
        request,
        participant.study.post_trial,
        "About the task you just did",
        reverse("study:post_trial", args=[trial.pk]),
        lambda data: submit_post_trial(participant, trial, data),
    )


@login_required(login_url="/")
@require_http_methods(["GET", "POST"])
def post_study(request: HttpRequest) -> HttpResponse:
    participant = get_participant(request.user)
    if (response := redirect_unless(participant, Page.POST_STUDY)) is not None:
        return response
    return _page(
        request,
        participant.study.post_study,
        "Looking back on the study",
        reverse("study:post_study"),
        lambda data: submit_post_study(participant, data),
    )
