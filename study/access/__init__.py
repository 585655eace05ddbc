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
from django.core.exceptions import ImproperlyConfigured, PermissionDenied
from django.db.models import Model, Q, QuerySet
from django.http import Http404, HttpRequest
from django.http.response import HttpResponseBase

from evaluation.models import AgentRun, Evaluation, Submission, Sweep
from study.models import (
    Answer,
    Arm,
    Assignment,
    AssignmentLock,
    ConfigSnapshot,
    ConsentEvent,
    ConsentForm,
    DesignPreview,
    ExportJob,
    LoginLink,
    Participant,
    Response,
    RetentionPolicy,
    Study,
    TaskPoolEntry,
    Track,
    Trial,
    User,
    Withdrawal,
)

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


def get_design_preview_for_researcher(user: User | AnonymousUser, preview_id: int) -> DesignPreview:
    try:
        return DesignPreview.objects.select_related("study").get(
            pk=preview_id, study__in=studies_for_researcher(user)
        )
    except DesignPreview.DoesNotExist:
        raise Http404("no such design preview") from None


def sees_every_study(user: User | AnonymousUser) -> bool:
    return bool(user.is_authenticated and user.is_staff and user.is_superuser)


def users_for_researcher(user: User | AnonymousUser) -> QuerySet[User]:
    """Accounts of the researcher's studies: their participants and their researchers (no one
    else's e-mail address)."""
    if sees_every_study(user):
        return User.objects.all()
    studies = studies_for_researcher(user)
    in_studies = Q(participant__study__in=studies) | Q(studies__in=studies)
    return User.objects.filter(pk__in=User.objects.filter(in_studies).values("pk"))


def researchers_for_researcher(user: User | AnonymousUser) -> QuerySet[User]:
    """Who may be picked as a study's researcher: staff accounts only, and for a researcher only
    the colleagues already on one of their studies (a superuser adds anyone else)."""
    staff = User.objects.filter(is_staff=True, is_active=True)
    if sees_every_study(user):
        return staff
    return staff.filter(pk__in=users_for_researcher(user).values("pk"))


def submissions_for_researcher(user: User | AnonymousUser) -> QuerySet[Submission]:
    """The engine's submissions of the researcher's trials (the engine itself knows no study)."""
    if sees_every_study(user):
        return Submission.objects.all()
    return Submission.objects.filter(pk__in=trials_for_researcher(user).values("submission"))


def evaluations_for_researcher(user: User | AnonymousUser) -> QuerySet[Evaluation]:
    if sees_every_study(user):
        return Evaluation.objects.all()
    return Evaluation.objects.filter(submission__in=submissions_for_researcher(user))


# --- LLM sweeps: the engine's, shared by every researcher allowed to see them ---------------
def sweeps_for_researcher(user: User | AnonymousUser) -> QuerySet[Sweep]:
    if not (user.is_authenticated and user.is_staff and user.has_perm("evaluation.view_sweep")):
        return Sweep.objects.none()
    return Sweep.objects.all()


def get_sweep_for_researcher(user: User | AnonymousUser, sweep_id: int) -> Sweep:
    try:
        return sweeps_for_researcher(user).select_related("endpoint", "dataset").get(pk=sweep_id)
    except Sweep.DoesNotExist:
        raise Http404("no such sweep") from None


def get_agent_run_for_researcher(user: User | AnonymousUser, run_id: int) -> AgentRun:
    try:
        return AgentRun.objects.select_related(
            "sweep__endpoint", "instance__template", "evaluation"
        ).get(pk=run_id, sweep__in=sweeps_for_researcher(user))
    except AgentRun.DoesNotExist:
        raise Http404("no such run") from None


# The lookup from each study-owned model to its study ("" for the study itself). Models of
# higher apps (telemetry) name theirs where they scope (``ScopedAdminMixin.study_path``).
STUDY_PATHS: dict[type[Model], str] = {
    Study: "",
    Track: "study",
    Arm: "study",
    TaskPoolEntry: "study",
    ConfigSnapshot: "study",
    ConsentForm: "study",
    ConsentEvent: "participant__study",
    Participant: "study",
    LoginLink: "participant__study",
    Assignment: "study",
    AssignmentLock: "study",
    Trial: "participant__study",
    Response: "participant__study",
    Answer: "response__participant__study",
    Withdrawal: "study",
    RetentionPolicy: "study",
    ExportJob: "study",
}
_SCOPED_BY_FUNCTION: dict[type[Model], Callable[[User | AnonymousUser], QuerySet[Any]]] = {
    User: users_for_researcher,
    Submission: submissions_for_researcher,
    Evaluation: evaluations_for_researcher,
}


def is_study_owned(model: type[Model]) -> bool:
    return model in STUDY_PATHS or model in _SCOPED_BY_FUNCTION


def scope_for_researcher(
    user: User | AnonymousUser, queryset: QuerySet[Any], study_path: str | None = None
) -> QuerySet[Any]:
    """``queryset`` narrowed to the rows of the researcher's studies (all rows for a superuser,
    none for anyone who is not staff). ``study_path`` is the lookup from the model to its study;
    without it the model must be one this module knows."""
    model = queryset.model
    if study_path is None and model in _SCOPED_BY_FUNCTION:
        return queryset.filter(pk__in=_SCOPED_BY_FUNCTION[model](user).values("pk"))
    if study_path is None:
        if model not in STUDY_PATHS:
            raise ImproperlyConfigured(f"{model._meta.label} has no known way to its study.")
        study_path = STUDY_PATHS[model]
    if not (user.is_authenticated and user.is_staff):
        return queryset.none()
    if sees_every_study(user):
        return queryset
    studies = studies_for_researcher(user)
    if not study_path:
        return queryset.filter(pk__in=studies.values("pk"))
    return queryset.filter(**{f"{study_path}__in": studies})
