"""Researcher actions on participants: exclusion with a reason, withdrawal on the participant's
request (per the study's withdrawal policy), and track override.

Both go through ``study.journey.services`` / the assignment service, so balance counts and the
participant's state machine stay consistent.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from study.assignment.services import override_track
from study.audit.withdrawal import withdraw_participant
from study.journey.services import exclude
from study.models import Participant, Study, Track


class ExcludeForm(forms.Form):
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=1000,
        help_text="Why these participants are excluded (kept with the record and the audit).",
    )


class TrackForm(forms.Form):
    track = forms.ModelChoiceField(queryset=Track.objects.none())


def exclude_action(
    admin_obj: object, request: HttpRequest, queryset: QuerySet[Participant]
) -> HttpResponse | None:
    form = ExcludeForm(request.POST if "apply" in request.POST else None)
    if form.is_valid():
        for participant in queryset:
            exclude(participant, form.cleaned_data["reason"], by=request.user)
        messages.success(request, f"Excluded {queryset.count()} participant(s).")
        return None
    return _confirm(
        admin_obj, request, queryset, form, "exclude_participants", "Exclude participants"
    )


class WithdrawForm(forms.Form):
    confirm = forms.BooleanField(
        label="These participants asked to withdraw (for example by e-mail to the PI).",
        help_text="Each study's withdrawal policy applies.",
    )


POLICY_EFFECT: dict[str, str] = {
    Study.WithdrawalPolicy.KEEP: "data collected so far is kept",
    Study.WithdrawalPolicy.DELETE: "answers, code, telemetry and contact data are deleted",
}


def withdraw_action(
    admin_obj: object, request: HttpRequest, queryset: QuerySet[Participant]
) -> HttpResponse | None:
    form = WithdrawForm(request.POST if "apply" in request.POST else None)
    if form.is_valid():
        done = sum(
            withdraw_participant(participant, channel="researcher", by=request.user) is not None
            for participant in queryset
        )
        messages.success(request, f"Withdrew {done} participant(s).")
        if done < queryset.count():
            messages.warning(
                request,
                f"{queryset.count() - done} participant(s) had already ended their "
                "participation (complete, declined, withdrawn or excluded); nothing changed.",
            )
        return None
    policies = sorted(set(queryset.values_list("study__slug", "study__withdrawal_policy")))
    form.fields["confirm"].help_text = "Per study policy: " + "; ".join(
        f"{slug}: {POLICY_EFFECT.get(policy, policy)}" for slug, policy in policies
    )
    return _confirm(
        admin_obj, request, queryset, form, "withdraw_participants", "Withdraw participants"
    )


def override_track_action(
    admin_obj: object, request: HttpRequest, queryset: QuerySet[Participant]
) -> HttpResponse | None:
    studies = set(queryset.values_list("study_id", flat=True))
    form = TrackForm(request.POST if "apply" in request.POST else None)
    form.fields["track"].queryset = Track.objects.filter(study_id__in=studies)  # type: ignore[attr-defined]
    if len(studies) != 1:
        messages.error(request, "Choose participants of one study at a time.")
        return None
    if form.is_valid():
        track = form.cleaned_data["track"]
        moved = sum(override_track(p, track, by=request.user) for p in queryset)
        messages.success(request, f"Set the track of {moved} participant(s).")
        if moved < queryset.count():
            messages.warning(
                request,
                f"{queryset.count() - moved} participant(s) already have a plan; their track "
                "can no longer change.",
            )
        return None
    return _confirm(admin_obj, request, queryset, form, "override_track", "Set the track")


def _confirm(
    admin_obj: object,
    request: HttpRequest,
    queryset: QuerySet[Participant],
    form: forms.Form,
    action: str,
    title: str,
) -> HttpResponse:
    site = getattr(admin_obj, "admin_site")  # noqa: B009 - typed as object to avoid a cycle
    context = {
        **site.each_context(request),
        "title": title,
        "opts": Participant._meta,
        "form": form,
        "participants": queryset.select_related("user"),
        "action": action,
    }
    return TemplateResponse(request, "study/admin/participant_action.html", context)
