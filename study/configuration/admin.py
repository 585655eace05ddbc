"""Admin of a study's configuration: the study with its tracks, arms and task pool, and the
frozen configuration snapshots.

What a save implies (back to draft, a new snapshot version, the audit event) and opening
recruitment are services in ``configuration.services``; closing is ``audit.retention``. The
study's page links to the balance table (``assignment.balance``) and the account batch
(``enrolment.admin``), routed here by ``get_urls``.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html_join

from evaluation.bank import BankError, list_templates, load_template
from evaluation.llm.validation import template_status
from study.access import researchers_for_researcher
from study.access.admin import ScopedAdminMixin, ScopedChoicesMixin
from study.assignment.balance import balance_view
from study.audit import retention
from study.configuration import services
from study.configuration.snapshots import ARM_FIELDS
from study.configuration.validation import cross_track_problem, cross_track_warnings
from study.enrolment.admin import create_participants_view
from study.models import Arm, ConfigSnapshot, Study, TaskPoolEntry, Track
from study.models.config import all_submission_channels
from study.readonly import ReadOnlyAdmin


class TrackInline(ScopedChoicesMixin, admin.TabularInline):
    model = Track
    extra = 0


class ArmForm(forms.ModelForm):
    submission_channels = forms.MultipleChoiceField(
        choices=Arm.Channel.choices,
        widget=forms.CheckboxSelectMultiple,
        initial=all_submission_channels,
        help_text=Arm._meta.get_field("submission_channels").help_text,
    )

    class Meta:
        model = Arm
        fields = ("condition", *ARM_FIELDS, "ai_endpoint")


class ArmInline(ScopedChoicesMixin, admin.StackedInline):
    model = Arm
    form = ArmForm
    extra = 0
    fields = (
        ("condition", "name"),
        ("ai_mode", "ide"),
        ("ai_provider", "ai_endpoint"),
        ("time_limit_min", "token_cap"),
        "submission_channels",
    )


def bank_choices() -> list[tuple[str, str]]:
    """The active templates; a retired one is offered only to the entry that already uses it."""
    return [
        (t.slug, f"{t.slug} — {t.track}/{t.difficulty} (v{t.version})") for t in list_templates()
    ]


class PoolEntryForm(forms.ModelForm):
    template_slug = forms.ChoiceField(choices=bank_choices, label="Template")

    class Meta:
        model = TaskPoolEntry
        fields = ("track", "template_slug", "active", "cross_track")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        current = self.instance.template_slug
        field = self.fields["template_slug"]
        if current and current not in {slug for slug, _ in field.choices}:  # type: ignore[attr-defined]
            try:
                spec = load_template(current)
            except BankError:
                return
            label = f"{spec.slug} — retired on {spec.retired_on} (v{spec.version})"
            field.choices = [*field.choices, (spec.slug, label)]  # type: ignore[attr-defined]

    def clean_template_slug(self) -> str:
        """The entry's difficulty is the template's own (shown read-only next to it)."""
        slug: str = self.cleaned_data["template_slug"]
        self.instance.difficulty = load_template(slug).difficulty
        return slug

    def clean(self) -> dict[str, Any]:
        """A template goes into its own track's pool unless the entry says cross-track."""
        data: dict[str, Any] = super().clean() or {}
        slug, track = data.get("template_slug"), data.get("track")
        if slug and track is not None and not data.get("cross_track"):
            template_track = load_template(slug).track
            if template_track != track.code:
                raise forms.ValidationError(cross_track_problem(slug, template_track, track.code))
        return data


class PoolInline(ScopedChoicesMixin, admin.TabularInline):
    model = TaskPoolEntry
    form = PoolEntryForm
    extra = 0
    readonly_fields = ("difficulty", "validation")

    @admin.display(description="validation")
    def validation(self, obj: TaskPoolEntry) -> str:
        """The validation status of the template's current version (manage.py
        validate_templates decides it; studies need "accepted" unless they allow unvalidated
        templates)."""
        if not obj.template_slug:
            return "-"
        try:
            version = load_template(obj.template_slug).version
        except BankError:
            return "not in the bank"
        return f"{template_status(obj.template_slug, version)} (v{version})"


@admin.register(Study)
class StudyAdmin(ScopedAdminMixin, admin.ModelAdmin):
    list_display = ("title", "slug", "status", "participant_count", "config_version", "tools")
    list_filter = ("status",)
    inlines = [TrackInline, ArmInline, PoolInline]
    filter_horizontal = ("researchers",)
    readonly_fields = ("config_version", "snapshot_list", "design_warnings")
    fieldsets = (
        (
            None,
            {
                "fields": (
                    "design_warnings",
                    "title",
                    "slug",
                    "description",
                    "status",
                    "contact",
                    "researchers",
                )
            },
        ),
        (
            "Session plan",
            {
                "fields": (("sessions", "trials_per_session"), ("gap_hours", "window_hours")),
                "description": "Participants do trials_per_session trials per session; the next "
                "session opens gap_hours after the previous one ended, give or take window_hours.",
            },
        ),
        (
            "Balance",
            {
                "fields": ("sequence_set", "balance_priority", "expected_dropout"),
                "description": "How plans are balanced. Each track aims at its own target (set "
                "on the track, or an equal share of what the tracks with their own leave of the "
                "study's target). The design preview "
                "(studies list, tools) simulates the allocation with the expected dropout and "
                "gives the allocation table; opening recruitment runs the same simulation and "
                "warns about the imbalance it expects.",
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
                    "allow_unvalidated_templates",
                    "target_participants",
                    "overbooking",
                )
            },
        ),
        ("Recruitment link", {"fields": ("recruitment_token", "recruitment_id_param")}),
        ("Frozen configurations", {"fields": ("config_version", "snapshot_list")}),
    )
    actions = ["open_recruitment", "close_study"]

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "researchers":
            kwargs["queryset"] = researchers_for_researcher(request.user)
            kwargs["help_text"] = (
                "Staff accounts who may see and manage this study. You can pick colleagues "
                "from your other studies; a superuser adds anyone else."
            )
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    @admin.display(description="participants")
    def participant_count(self, obj: Study) -> int:
        return obj.participants.count()

    @admin.display(description="tools")
    def tools(self, obj: Study) -> str:
        links = [
            (reverse("admin:study_study_balance", args=[obj.pk]), "balance"),
            (reverse("study:design_preview", args=[obj.slug]), "design preview"),
            (reverse("admin:study_study_create_participants", args=[obj.pk]), "create accounts"),
        ]
        return format_html_join(" · ", '<a href="{}">{}</a>', links)

    @admin.display(description="warnings")
    def design_warnings(self, obj: Study) -> str:
        """Cross-track pool entries (allowed, but worth a look on every visit)."""
        if obj.pk is None:
            return "-"
        return " ".join(cross_track_warnings(obj)) or "none"

    @admin.display(description="snapshots")
    def snapshot_list(self, obj: Study) -> str:
        rows = [
            f"v{s.version} {s.sha256[:12]} ({s.participants.count()} participants)"
            for s in obj.snapshots.all()[:20]
        ]
        return "; ".join(rows) or "none yet (taken when the first participant consents)"

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        saved = services.record_study_saved(
            form.instance,
            actor=request.user,
            created=not change,
            fields=form.changed_data,
            inlines=[formset.prefix for formset in formsets if formset.has_changed()],
            status_before=form.initial.get("status"),
        )
        for problem in saved.problems:
            messages.error(request, problem)
        if saved.back_to_draft:
            messages.warning(request, "The study was put back to draft until these are fixed.")
        if saved.new_version is not None:
            messages.info(
                request,
                f"New configuration version {saved.new_version}: new participants get it; "
                "earlier ones keep what they saw.",
            )

    @admin.action(description="Open recruitment (checks the configuration first)")
    def open_recruitment(self, request: HttpRequest, queryset: QuerySet[Study]) -> None:
        for study in queryset:
            try:
                warnings = services.open_recruitment(study, actor=request.user)
            except services.CannotOpen as exc:
                messages.error(request, f"{study.slug}: {exc}")
            else:
                messages.success(request, f"{study.slug} is now recruiting.")
                for warning in warnings:
                    messages.warning(request, f"{study.slug}: {warning}")

    @admin.action(description="Close the study")
    def close_study(self, request: HttpRequest, queryset: QuerySet[Study]) -> None:
        updated = sum(retention.close_study(study, actor=request.user) for study in queryset)
        messages.success(request, f"Closed {updated} study/studies.")

    def get_urls(self) -> list[URLPattern]:
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
class ConfigSnapshotAdmin(ScopedAdminMixin, ReadOnlyAdmin):
    list_display = ("study", "version", "sha256", "created_at")
    readonly_fields = ("study", "version", "sha256", "content", "created_at")
