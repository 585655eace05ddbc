"""Vault in the admin: metadata only, plus one audited read view.

The entry list never shows plaintext (nor ciphertext). Decrypted contact data appears only on
``admin:vault_vaultentry_read`` after the reader names a purpose; each read is a ``VaultRead``.
Everything here needs ``study.view_vault``; entries are written only through the services.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path

from study.access import sees_every_study, studies_for_researcher
from study.access.admin import ScopedAdminMixin
from study.readonly import ReadOnlyAdmin
from study.vault.models import VaultEntry, VaultRead
from study.vault.services import CONTACT_FIELDS, VAULT_PERMISSION, read_vault


def _may_read(request: HttpRequest) -> bool:
    return request.user.is_active and request.user.has_perm(VAULT_PERMISSION)


class _VaultOnlyAdmin(ScopedAdminMixin, ReadOnlyAdmin):
    """Read-only, invisible without the vault permission, and only the reader's studies."""

    def scope_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if sees_every_study(request.user):
            return queryset
        slugs = studies_for_researcher(request.user).values("slug")
        return queryset.filter(study_slug__in=slugs)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return _may_read(request) and super().has_module_permission(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return _may_read(request) and super().has_view_permission(request, obj)


class VaultReadForm(forms.Form):
    study_slug = forms.ChoiceField(label="Study")
    purpose = forms.CharField(
        max_length=200, help_text="Recorded in the audit log, e.g. 'session 1 compensation'."
    )

    def __init__(self, *args: Any, slugs: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["study_slug"].choices = [(slug, slug) for slug in slugs]  # type: ignore[attr-defined]


@admin.register(VaultEntry)
class VaultEntryAdmin(_VaultOnlyAdmin):
    list_display = ("internal_id", "study_slug", "created_at", "updated_at")
    list_filter = ("study_slug",)
    fields = ("internal_id", "study_slug", "created_at", "updated_at")
    readonly_fields = fields
    change_list_template = "vault/entry_change_list.html"

    def get_urls(self) -> list[URLPattern]:
        custom = [
            path("read/", self.admin_site.admin_view(self.read_view), name="vault_vaultentry_read")
        ]
        return custom + super().get_urls()

    def read_view(self, request: HttpRequest) -> HttpResponse:
        if not _may_read(request):
            raise PermissionDenied(f"Reading the vault needs the {VAULT_PERMISSION} permission.")
        in_vault = set(VaultEntry.objects.values_list("study_slug", flat=True).distinct())
        visible = set(studies_for_researcher(request.user).values_list("slug", flat=True))
        slugs = sorted(in_vault & visible)
        form = VaultReadForm(request.POST or None, slugs=slugs)
        rows: list[dict[str, Any]] | None = None
        if request.method == "POST" and form.is_valid():
            rows = read_vault(
                request.user, form.cleaned_data["study_slug"], form.cleaned_data["purpose"]
            )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Read the contact vault",
            "form": form,
            "rows": rows,
            "fields": CONTACT_FIELDS,
        }
        response = TemplateResponse(request, "vault/read.html", context)
        response["Cache-Control"] = "no-store"
        return response


@admin.register(VaultRead)
class VaultReadAdmin(_VaultOnlyAdmin):
    list_display = ("when", "who", "study_slug", "purpose", "n_entries")
    list_filter = ("study_slug",)
    date_hierarchy = "when"
