"""The access-control chokepoints for participant-owned and study-owned objects.

Every view, consumer and admin page fetches such objects only through these functions. "Missing"
and "not yours" give the same 404, so nobody can probe for other people's ids. A signed-in user
who is not a researcher at all gets a 403 on researcher pages (``researcher_only``): that says
nothing about any object.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest
from django.http.response import HttpResponseBase

from study.models import ExportJob, Participant, Study, Trial, User

NOT_A_RESEARCHER = "This page is for researchers."

View = TypeVar("View", bound=Callable[..., HttpResponseBase])


def researcher_only(view: View) -> View:
    """Sign-in required (a redirect to the login page); then staff only (403)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.is_staff:
            raise PermissionDenied(NOT_A_RESEARCHER)
        return view(request, *args, **kwargs)

    return login_required(wrapped)  # type: ignore[return-value]


# --- Participants ----------------------------------------------------------------------------
def get_participant(user: User | AnonymousUser) -> Participant:
    if not user.is_authenticated:
        raise Http404("not a participant")
    try:
        return Participant.objects.select_related("study", "track", "snapshot").get(user=user)
    except Participant.DoesNotExist:
        raise Http404("not a participant") from None


def get_trial_for_participant(participant: Participant, trial_id: int) -> Trial:
    try:
        trial = Trial.objects.select_related("arm", "instance__template", "evaluation").get(
            pk=trial_id, participant=participant
        )
    except Trial.DoesNotExist:
        raise Http404("no such trial") from None
    trial.participant = participant  # already loaded with the study and the frozen snapshot
    return trial


def get_own_trial(user: User | AnonymousUser, trial_id: int) -> Trial:
    """The signed-in participant's trial ``trial_id`` (404 for anyone else's or none)."""
    return get_trial_for_participant(get_participant(user), trial_id)


def get_trial_for_bearer(trial_id: int, opens: Callable[[Trial], bool]) -> Trial:
    """A trial reached with a bearer token instead of a session (non-browser clients): ``opens``
    says whether the presented token opens it. A missing trial and a wrong token are the same
    404, so token holders cannot map which trial ids exist."""
    trial = (
        Trial.objects.select_related("arm", "participant__study", "participant__snapshot")
        .filter(pk=trial_id)
        .first()
    )
    if trial is None or not opens(trial):
        raise Http404("no such trial")
    return trial


# --- Researchers -----------------------------------------------------------------------------
def studies_for_researcher(user: User | AnonymousUser) -> QuerySet[Study]:
    if not user.is_authenticated or not user.is_staff:
        return Study.objects.none()
    if user.is_superuser:
        return Study.objects.all()
    return Study.objects.filter(researchers=user)


def get_study_for_researcher(user: User | AnonymousUser, slug: str) -> Study:
    try:
        return studies_for_researcher(user).get(slug=slug)
    except Study.DoesNotExist:
        raise Http404("no such study") from None


def get_study_by_id_for_researcher(user: User | AnonymousUser, study_id: int) -> Study:
    try:
        return studies_for_researcher(user).get(pk=study_id)
    except Study.DoesNotExist:
        raise Http404("no such study") from None


def trials_for_researcher(user: User | AnonymousUser) -> QuerySet[Trial]:
    """Every trial of the researcher's studies (what the monitor, replay and flags may show)."""
    return Trial.objects.filter(participant__study__in=studies_for_researcher(user))


def get_trial_for_researcher(user: User | AnonymousUser, trial_id: int) -> Trial:
    try:
        return (
            trials_for_researcher(user).select_related("participant__study", "arm").get(pk=trial_id)
        )
    except Trial.DoesNotExist:
        raise Http404("no such trial") from None


def participants_for_researcher(user: User | AnonymousUser) -> QuerySet[Participant]:
    return Participant.objects.filter(study__in=studies_for_researcher(user))


def get_export_job_for_researcher(user: User | AnonymousUser, job_id: int) -> ExportJob:
    try:
        return ExportJob.objects.select_related("study").get(
            pk=job_id, study__in=studies_for_researcher(user)
        )
    except ExportJob.DoesNotExist:
        raise Http404("no such export") from None
