"""Admin: the questionnaire builder, consent forms, and read-only consent events and responses.

Imported by ``study.configuration.admin``. A questionnaire version is edited (items inline) only
while it is unpublished and unanswered; "Publish" checks and freezes it, "Create new draft version"
copies it for editing. Consent forms are immutable once saved: their page is read-only and "Create
next version" opens the add form pre-filled from the selected form.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from study.access.admin import ScopedAdminMixin
from study.enrolment.consent import next_version_label, render_consent, validate_checkboxes
from study.models import (
    Answer,
    ConsentEvent,
    ConsentForm,
    Item,
    Questionnaire,
    QuestionnaireVersion,
    Response,
)
from study.questionnaires.builder import is_frozen, item_problems, order_problems, version_problems
from study.questionnaires.scoring import scale_scores
from study.questionnaires.services import copy_version, publish_version
from study.readonly import ReadOnlyAdmin


# --- Questionnaires -----------------------------------------------------------------------
@admin.register(Questionnaire)
class QuestionnaireAdmin(admin.ModelAdmin):
    list_display = ("title", "slug", "kind", "version_list")
    list_filter = ("kind",)
    search_fields = ("title", "slug")

    @admin.display(description="versions")
    def version_list(self, obj: Questionnaire) -> str:
        marks = [f"v{v.version}{'' if v.published else ' (draft)'}" for v in obj.versions.all()]
        return ", ".join(marks) or "none yet"


ITEM_LAYOUT: tuple[Any, ...] = (
    ("order", "key", "type", "required"),
    "text",
    "help_text",
    "choices",
    ("min_value", "max_value"),
    ("show_if", "scale"),
)
ITEM_FIELDS = tuple(
    name for row in ITEM_LAYOUT for name in ((row,) if isinstance(row, str) else row)
)


class ItemForm(forms.ModelForm):
    class Meta:
        model = Item
        fields = ITEM_FIELDS
        help_texts = {
            "choices": 'Single/multiple choice: [{"value": "yes", "label": "Yes"}, ...]. '
            'Likert: [] or [{"low": "Strongly disagree", "high": "Strongly agree"}]. Else [].',
            "show_if": 'Show only when an earlier item has one of these answers: {"item": '
            '"ai_frequency", "in": ["weekly", "daily"]}. Empty {}: always shown.',
            "scale": "Numeric items with the same scale are averaged in scale scores; add "
            '":r" to reverse-score an item (e.g. usability:r).',
            "min_value": "Number items only.",
            "max_value": "Number items only.",
        }

    def clean_choices(self) -> Any:
        return self.cleaned_data.get("choices") or []

    def clean_show_if(self) -> Any:
        return self.cleaned_data.get("show_if") or {}

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        probe = Item(**{name: cleaned.get(name) for name in ITEM_FIELDS})
        for field, found in item_problems(probe).items():
            if field in self.fields and field not in self.errors:
                self.add_error(field, found)
        return cleaned


class ItemFormSet(forms.BaseInlineFormSet):
    def clean(self) -> None:
        super().clean()
        kept = [
            form.instance
            for form in self.forms
            if form.has_changed() or form.instance.pk
            if form.is_valid() and not form.cleaned_data.get("DELETE")
        ]
        kept.sort(key=lambda item: item.order)
        problems = order_problems(kept)
        if problems:
            raise forms.ValidationError(problems)


class ItemInline(admin.StackedInline):
    """The builder: one block per item. Read-only once the version is published or answered."""

    model = Item
    form = ItemForm
    formset = ItemFormSet
    extra = 0
    fields = ITEM_LAYOUT

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not is_frozen(obj) and super().has_add_permission(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not is_frozen(obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not is_frozen(obj) and super().has_delete_permission(request, obj)


@admin.register(QuestionnaireVersion)
class QuestionnaireVersionAdmin(admin.ModelAdmin):
    list_display = ("__str__", "version", "published", "item_count", "created_at")
    list_filter = ("questionnaire", "published")
    inlines = [ItemInline]
    actions = ["publish", "create_draft"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        frozen = ("questionnaire", "version", "intro") if is_frozen(obj) else ()
        return (*frozen, "published", "status")

    fields = ("questionnaire", "version", "intro", "published", "status")

    @admin.display(description="items")
    def item_count(self, obj: QuestionnaireVersion) -> int:
        return obj.items.count()

    @admin.display(description="status")
    def status(self, obj: QuestionnaireVersion) -> str:
        if obj.pk is None:
            return "Draft: add items below, save, then use the Publish action."
        if obj.published:
            return "Published: frozen. Use 'Create new draft version' to change it."
        if is_frozen(obj):
            return "Answered while unpublished: frozen. Create a new draft version to change it."
        problems = version_problems(obj)
        return "Draft; ready to publish." if not problems else "Draft. " + " ".join(problems)

    @admin.action(description="Publish (checks and freezes the selected versions)")
    def publish(self, request: HttpRequest, queryset: QuerySet[QuestionnaireVersion]) -> None:
        for version in queryset:
            if version.published:
                messages.info(request, f"{version} is already published.")
                continue
            try:
                publish_version(version)
            except ValueError as exc:
                messages.error(request, f"{version} not published: {exc}")
            else:
                messages.success(request, f"{version} is published.")

    @admin.action(description="Create new draft version from this one (copies the items)")
    def create_draft(
        self, request: HttpRequest, queryset: QuerySet[QuestionnaireVersion]
    ) -> HttpResponseRedirect | None:
        drafts = [copy_version(version) for version in queryset]
        for draft in drafts:
            messages.success(request, f"Created {draft} as an editable draft.")
        if len(drafts) == 1:
            url = reverse("admin:study_questionnaireversion_change", args=[drafts[0].pk])
            return HttpResponseRedirect(url)
        return None


# --- Consent forms ------------------------------------------------------------------------
# The editable fields of a new consent form; a saved one shows them read-only.
CONSENT_FIELDS = ("study", "version", "title", "mode", "irb_reference", "body_markdown")


class ConsentFormForm(forms.ModelForm):
    class Meta:
        model = ConsentForm
        fields = (*CONSENT_FIELDS, "checkboxes")
        help_texts = {
            "body_markdown": "Markdown (headings, lists, bold, links). Raw HTML is shown as text. "
            "Cover what is recorded and how data is anonymised. Saved forms cannot be "
            "changed: create the next version instead.",
            "checkboxes": 'A JSON list: [{"id": "adult", "label": "I am 18 or older.", '
            '"required": true}, ...]. Agreeing needs every required box ticked.',
            "mode": "Click to consent suits a waiver of documentation; typed-name mode asks for "
            "a name, which is kept only in the encrypted vault.",
            "irb_reference": "Ethics approval number, shown under the text.",
        }

    def clean_checkboxes(self) -> Any:
        value = self.cleaned_data.get("checkboxes") or []
        validate_checkboxes(value)
        return value


@admin.register(ConsentForm)
class ConsentFormAdmin(ScopedAdminMixin, admin.ModelAdmin):
    form = ConsentFormForm
    list_display = ("study", "version", "title", "mode", "event_count", "created_at")
    list_filter = ("study", "mode")
    actions = ["create_next_version"]
    readonly_fields = ("preview", "content_sha256", "created_at")

    def get_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        extra = ("preview", "content_sha256", "created_at")
        fields = (*CONSENT_FIELDS, "checkboxes")
        return fields if obj is None else (*fields, *extra)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None and super().has_change_permission(request, obj)  # immutable

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and obj.events.exists():
            return False
        return super().has_delete_permission(request, obj)

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        initial: dict[str, Any] = dict(super().get_changeform_initial_data(request))
        source = self.get_queryset(request).filter(pk=request.GET.get("from") or 0).first()
        if source is not None:
            initial |= dict(
                study=source.study_id,
                version=next_version_label(source),
                title=source.title,
                mode=source.mode,
                irb_reference=source.irb_reference,
                body_markdown=source.body_markdown,
                checkboxes=source.checkboxes,
            )
        return initial

    @admin.display(description="decisions")
    def event_count(self, obj: ConsentForm) -> int:
        return obj.events.count()

    @admin.display(description="as participants see it")
    def preview(self, obj: ConsentForm) -> str:
        rows = ((b["label"], " (required)" if b.get("required") else "") for b in obj.checkboxes)
        return format_html(
            '<div class="consent-preview">{}<p>Checkboxes:</p><ul>{}</ul></div>',
            render_consent(obj),
            format_html_join("", "<li>{}{}</li>", rows),
        )

    @admin.action(description="Create next version (opens a pre-filled form to edit)")
    def create_next_version(
        self, request: HttpRequest, queryset: QuerySet[ConsentForm]
    ) -> HttpResponseRedirect | None:
        if queryset.count() != 1:
            messages.error(request, "Select exactly one consent form to start the next version.")
            return None
        form = queryset.get()
        url = reverse("admin:study_consentform_add") + "?" + urlencode({"from": form.pk})
        return HttpResponseRedirect(url)


# --- Read-only records --------------------------------------------------------------------
@admin.register(ConsentEvent)
class ConsentEventAdmin(ScopedAdminMixin, ReadOnlyAdmin):
    list_display = ("participant", "form", "decision", "typed_name_given", "decided_at")
    list_filter = ("decision", "form__study")
    list_select_related = ("participant__user", "form__study")
    fields = (
        ("participant", "form", "decision", "decided_at"),
        ("checkboxes", "typed_name_given"),
        ("form_sha256", "rendered_sha256"),
        "shown_text",
    )
    readonly_fields = tuple(
        name for row in fields for name in ((row,) if isinstance(row, str) else row)
    )

    @admin.display(description="text shown")
    def shown_text(self, obj: ConsentEvent) -> str:
        # Shown as source, escaped: the exact stored HTML, never interpreted here.
        return format_html('<pre style="white-space: pre-wrap">{}</pre>', obj.rendered_html)


class AnswerInline(admin.TabularInline):
    model = Answer
    fields = ("item", "value")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Response)
class ResponseAdmin(ScopedAdminMixin, ReadOnlyAdmin):
    list_display = ("participant", "version", "trial", "submitted_at")
    list_filter = ("version",)
    list_select_related = ("participant__user", "version__questionnaire", "trial")
    fields = ("participant", "version", "trial", "submitted_at", "scores")
    readonly_fields = fields
    inlines = [AnswerInline]

    @admin.display(description="scale scores (means)")
    def scores(self, obj: Response) -> str:
        found = scale_scores(obj)
        return ", ".join(f"{name}: {value:.2f}" for name, value in found.items()) or "none"
