"""The access-control chokepoints for participant-owned and study-owned objects.

Every view fetches such objects only through these functions. "Missing" and "not yours" give the
same 404, so nobody can probe for other people's ids.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.db.models import QuerySet
from django.http import Http404

from study.models import Participant, Study, Trial, User


def get_participant(user: User | AnonymousUser) -> Participant:
    if not user.is_authenticated:
        raise Http404("not a participant")
    try:
        return Participant.objects.select_related("study", "track", "snapshot").get(user=user)
    except Participant.DoesNotExist:
        raise Http404("not a participant") from None


def get_trial_for_participant(participant: Participant, trial_id: int) -> Trial:
    try:
        return Trial.objects.select_related("arm", "instance__template", "evaluation").get(
            pk=trial_id, participant=participant
        )
    except Trial.DoesNotExist:
        raise Http404("no such trial") from None


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


def get_trial_for_researcher(user: User | AnonymousUser, trial_id: int) -> Trial:
    try:
        return Trial.objects.select_related("participant__study", "arm").get(
            pk=trial_id, participant__study__in=studies_for_researcher(user)
        )
    except Trial.DoesNotExist:
        raise Http404("no such trial") from None
