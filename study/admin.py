"""Admin for researchers: users, study configuration and its snapshots.

Other admin modules register their models on import: ``admin_accounts`` (participants and
accounts), ``admin_questionnaires`` (the questionnaire builder and consent forms),
``admin_balance`` (the live balance table), ``admin_audit`` (audit log, withdrawals,
retention).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html_join

from study.admin_audit import audit_study_save
from study.audit import record_config_change
from study.models import Arm, ConfigSnapshot, Study, TaskPoolEntry, Track, User
from study.validation import configuration_problems


@admin.register(User)
class PlatformUserAdmin(UserAdmin):
    list_display = ("username", "email", "is_staff", "is_active", "last_login")
    list_filter = ("is_staff", "is_superuser", "is_active", "groups")


class TrackInline(admin.TabularInline):
    model = Track
    extra = 0


class ArmInline(admin.StackedInline):
    model = Arm
    extra = 0
    fields = (("condition", "name"), ("ai_mode", "ide"), ("time_limit_min", "model", "token_cap"))


def bank_choices() -> list[tuple[str, str]]:
    from evaluation.bank import list_templates

    return [
        (t.slug, f"{t.slug} — {t.track}/{t.difficulty} (v{t.version})") for t in list_templates()
    ]


class PoolEntryForm(forms.ModelForm):
    template_slug = forms.ChoiceField(choices=bank_choices, label="Template")

    class Meta:
        model = TaskPoolEntry
        fields = ("track", "template_slug", "active")

    def save(self, commit: bool = True) -> TaskPoolEntry:
        from evaluation.bank import load_template

        entry: TaskPoolEntry = super().save(commit=False)
        entry.difficulty = load_template(entry.template_slug).difficulty
        if commit:
            entry.save()
        return entry


class PoolInline(admin.TabularInline):
    model = TaskPoolEntry
    form = PoolEntryForm
    extra = 0
    readonly_fields = ("difficulty",)


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ("title", "slug", "status", "participant_count", "config_version", "tools")
    list_filter = ("status",)
    inlines = [TrackInline, ArmInline, PoolInline]
    filter_horizontal = ("researchers",)
    readonly_fields = ("config_version", "snapshot_list")
    fieldsets = (
        (None, {"fields": ("title", "slug", "description", "status", "contact", "researchers")}),
        (
            "Session plan",
            {
                "fields": (("sessions", "trials_per_session"), ("gap_hours", "window_hours")),
                "description": "Participants do trials_per_session trials per session; the next "
                "session opens gap_hours after the previous one ended, give or take window_hours.",
            },
        ),
        (
            "Instruments",
            {"fields": ("consent_form", "screening", "post_trial", "post_study", "track_item_key")},
        ),
        (
            "Policies",
            {
                "fields": (
                    "report_release",
                    "withdrawal_policy",
                    "replace_session2_no_shows",
                    "target_participants",
                    "overbooking",
                )
            },
        ),
        ("Recruitment link", {"fields": ("recruitment_token", "recruitment_id_param")}),
        ("Frozen configurations", {"fields": ("config_version", "snapshot_list")}),
    )
    actions = ["open_recruitment", "close_study"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Study]:
        from study.access import studies_for_researcher

        return studies_for_researcher(request.user)

    @admin.display(description="participants")
    def participant_count(self, obj: Study) -> int:
        return obj.participants.count()

    @admin.display(description="tools")
    def tools(self, obj: Study) -> str:
        links = [
            (reverse("admin:study_study_balance", args=[obj.pk]), "balance"),
            (reverse("admin:study_study_create_participants", args=[obj.pk]), "create accounts"),
        ]
        return format_html_join(" · ", '<a href="{}">{}</a>', links)

    @admin.display(description="snapshots")
    def snapshot_list(self, obj: Study) -> str:
        rows = [
            f"v{s.version} {s.sha256[:12]} ({s.participants.count()} participants)"
            for s in obj.snapshots.all()[:20]
        ]
        return "; ".join(rows) or "none yet (taken when the first participant consents)"

    def save_model(self, request: HttpRequest, obj: Study, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if not change and not request.user.is_superuser:
            obj.researchers.add(request.user)  # type: ignore[arg-type]

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        study: Study = form.instance
        if study.status == Study.Status.RECRUITING:
            problems = configuration_problems(study)
            for problem in problems:
                messages.error(request, problem)
            if problems:
                study.status = Study.Status.DRAFT
                study.save(update_fields=["status"])
                messages.warning(request, "The study was put back to draft until these are fixed.")
        new_version: int | None = None
        if study.participants.exists():
            from study.snapshots import current_snapshot

            snapshot = current_snapshot(study)
            if study.config_version != snapshot.version:
                new_version = study.config_version = snapshot.version
                study.save(update_fields=["config_version"])
                messages.info(
                    request,
                    f"New configuration version {snapshot.version}: new "
                    "participants get it; earlier ones keep what they saw.",
                )
        audit_study_save(request, form, formsets, change, new_version)

    @admin.action(description="Open recruitment (checks the configuration first)")
    def open_recruitment(self, request: HttpRequest, queryset: QuerySet[Study]) -> None:
        for study in queryset:
            problems = configuration_problems(study)
            if problems:
                messages.error(request, f"{study.slug}: " + " ".join(problems))
                continue
            with transaction.atomic():
                status_before, study.status = study.status, Study.Status.RECRUITING
                study.save(update_fields=["status"])
                record_config_change(
                    study,
                    actor=request.user,
                    change="status",
                    status=study.status,
                    status_before=status_before,
                )
            messages.success(request, f"{study.slug} is now recruiting.")

    @admin.action(description="Close the study")
    def close_study(self, request: HttpRequest, queryset: QuerySet[Study]) -> None:
        from study.retention import close_study

        updated = sum(close_study(study, actor=request.user) for study in queryset)
        messages.success(request, f"Closed {updated} study/studies.")

    def get_urls(self) -> list[Any]:
        from django.urls import path

        from study.admin_accounts import create_participants_view
        from study.admin_balance import balance_view

        custom = [
            path(
                "<int:study_id>/balance/",
                self.admin_site.admin_view(balance_view),
                name="study_study_balance",
            ),
            path(
                "<int:study_id>/create-participants/",
                self.admin_site.admin_view(create_participants_view),
                name="study_study_create_participants",
            ),
        ]
        return custom + super().get_urls()


@admin.register(ConfigSnapshot)
class ConfigSnapshotAdmin(admin.ModelAdmin):
    list_display = ("study", "version", "sha256", "created_at")
    readonly_fields = ("study", "version", "sha256", "content", "created_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# Registering these admin modules is their import's side effect.
from study import admin_accounts, admin_questionnaires  # noqa: E402,F401
