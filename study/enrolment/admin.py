"""Researcher tools for participant accounts in the admin.

Wiring (done in ``study/admin.py``):

- ``create_participants_view(request, study_id)`` is routed by ``StudyAdmin.get_urls`` as
  ``<study_id>/create-participants/`` (``admin:study_study_create_participants``), wrapped in
  ``admin_site.admin_view``. GET shows a form (N in 1..500, link lifetime); POST creates the
  accounts and answers with the credential sheet ``credentials-<slug>-<timestamp>.csv``: the only
  time the login links exist in clear.
- ``ParticipantAdmin`` registers itself on import (``study/admin.py`` imports this module). It
  lists participants of the researcher's studies, shows no vault data, and has the action "Issue a
  new login link", which shows the new links once. Exclusion, withdrawal and track override are
  in ``admin_participant_actions``.

Permissions: creating accounts needs ``study.add_participant``; issuing links needs
``study.change_participant``; both only for studies the researcher can see.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.utils import timezone

from study.access import studies_for_researcher
from study.access.admin import ScopedAdminMixin
from study.enrolment.accounts import (
    MAX_BATCH,
    create_participants,
    credential_sheet_csv,
    issue_login_link,
)
from study.enrolment.forms import CreateParticipantsForm
from study.journey.actions import exclude_action, override_track_action, withdraw_action
from study.models import Participant, User


def _no_store(response: HttpResponse) -> HttpResponse:
    response["Cache-Control"] = "no-store"
    return response


def create_participants_view(request: HttpRequest, study_id: int) -> HttpResponse:
    """Create N anonymous accounts for a study and download their credential sheet."""
    user = request.user
    if not isinstance(user, User) or not user.has_perm("study.add_participant"):
        raise PermissionDenied("Creating participant accounts needs study.add_participant.")
    study = get_object_or_404(studies_for_researcher(user), pk=study_id)
    form = CreateParticipantsForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        accounts = create_participants(
            study, form.cleaned_data["n"], created_by=user, ttl_days=form.cleaned_data["ttl_days"]
        )
        sheet = credential_sheet_csv(accounts, base_url=request.build_absolute_uri("/"))
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        response = HttpResponse(sheet, content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = (
            f'attachment; filename="credentials-{study.slug}-{stamp}.csv"'
        )
        return _no_store(response)
    context = {
        **admin.site.each_context(request),
        "title": f"Create participant accounts for {study.title}",
        "opts": Participant._meta,
        "study": study,
        "form": form,
        "max_batch": MAX_BATCH,
    }
    return _no_store(TemplateResponse(request, "study/accounts/admin_create.html", context))


@admin.register(Participant)
class ParticipantAdmin(ScopedAdminMixin, admin.ModelAdmin):
    list_display = ("username", "study", "stage", "track", "session_index", "created_at")
    list_filter = ("stage", "track", "study")
    list_select_related = ("user", "study", "track")
    search_fields = ("user__username",)
    fields = (
        "user",
        "study",
        "internal_id",
        "stage",
        "track",
        "track_overridden",
        "session_index",
        "next_session_opens_at",
        "next_session_closes_at",
        "exclusion_reason",
        "created_at",
        "last_activity_at",
        "ended_at",
    )
    readonly_fields = fields
    actions = [
        "issue_login_links",
        "exclude_participants",
        "withdraw_participants",
        "override_track",
    ]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # accounts come from the study's "create accounts" page

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # participants leave through withdrawal, which keeps the audit trail

    @admin.display(description="username", ordering="user__username")
    def username(self, obj: Participant) -> str:
        return obj.user.username

    @admin.action(description="Exclude (with a reason)", permissions=["change"])
    def exclude_participants(
        self, request: HttpRequest, queryset: QuerySet[Participant]
    ) -> HttpResponse | None:

        return exclude_action(self, request, queryset)

    @admin.action(description="Withdraw (per study policy)", permissions=["change"])
    def withdraw_participants(
        self, request: HttpRequest, queryset: QuerySet[Participant]
    ) -> HttpResponse | None:

        return withdraw_action(self, request, queryset)

    @admin.action(description="Set the track (researcher override)", permissions=["change"])
    def override_track(
        self, request: HttpRequest, queryset: QuerySet[Participant]
    ) -> HttpResponse | None:

        return override_track_action(self, request, queryset)

    @admin.action(description="Issue a new login link", permissions=["change"])
    def issue_login_links(
        self, request: HttpRequest, queryset: QuerySet[Participant]
    ) -> HttpResponse:
        links = [
            (participant.user.username, request.build_absolute_uri(issue_login_link(participant)))
            for participant in queryset.select_related("user").order_by("user__username")
        ]
        context = {
            **self.admin_site.each_context(request),
            "title": "New login links",
            "opts": self.model._meta,
            "links": links,
        }
        return _no_store(TemplateResponse(request, "study/accounts/admin_links.html", context))
