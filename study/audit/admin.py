"""Admin for the audit log, withdrawal tombstones and retention policies.

- ``AuditEventAdmin``: read-only list with filters; "Verify chain" (``verify/``) recomputes the
  hash chain; "Download CSV" (``export.csv``) and the action "Export selected as CSV" give the
  log to an IRB auditor, with the hashes needed to re-verify it offline. Every CSV export is
  itself audited. All need ``study.view_auditevent``.
- ``WithdrawalAdmin``: read-only list of tombstones of the researcher's studies.
- ``RetentionPolicyAdmin``: retention periods per study (``closed_at`` is set by closing).

Registered on import (``study/admin.py`` imports this module).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path
from django.utils import timezone

from study.access.admin import ScopedAdminMixin
from study.audit import log as audit
from study.audit.exports import CSV_COLUMNS, export_audit_log
from study.audit.retention import record_retention_change
from study.models import AuditEvent, RetentionPolicy, Withdrawal
from study.readonly import ReadOnlyAdmin


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("seq", "ts", "actor_type", "actor_ref", "action", "object_type", "object_id")
    list_filter = ("action", "actor_type", "object_type")
    search_fields = ("actor_ref", "object_id")
    date_hierarchy = "ts"
    ordering = ("-seq",)
    readonly_fields = (*CSV_COLUMNS[:-2], "prev_hash", "hash")
    fields = readonly_fields
    actions = ["export_csv"]
    change_list_template = "study/admin/audit_change_list.html"

    def get_urls(self) -> list[Any]:
        custom = [
            path(
                "verify/",
                self.admin_site.admin_view(self.verify_view),
                name="study_auditevent_verify",
            ),
            path(
                "export.csv",
                self.admin_site.admin_view(self.export_view),
                name="study_auditevent_export",
            ),
        ]
        return custom + super().get_urls()

    def _check(self, request: HttpRequest) -> None:
        if not self.has_view_permission(request):
            raise PermissionDenied("The audit log needs study.view_auditevent.")

    def verify_view(self, request: HttpRequest) -> HttpResponse:
        self._check(request)
        context = {
            **self.admin_site.each_context(request),
            "title": "Audit chain verification",
            "opts": self.model._meta,
            "result": audit.verify_chain(),
        }
        return TemplateResponse(request, "study/admin/audit_verify.html", context)

    def export_view(self, request: HttpRequest) -> HttpResponse:
        self._check(request)
        return self._csv_response(request, AuditEvent.objects.all(), scope="all")

    @admin.action(description="Export selected as CSV", permissions=["view"])
    def export_csv(self, request: HttpRequest, queryset: QuerySet[AuditEvent]) -> HttpResponse:
        return self._csv_response(request, queryset, scope="selected")

    def _csv_response(
        self, request: HttpRequest, events: QuerySet[AuditEvent], *, scope: str
    ) -> HttpResponse:
        body = export_audit_log(events, actor=request.user, scope=scope)
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        response = HttpResponse(body, content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="audit-log-{stamp}.csv"'
        response["Cache-Control"] = "no-store"
        return response


@admin.register(Withdrawal)
class WithdrawalAdmin(ScopedAdminMixin, ReadOnlyAdmin):
    list_display = ("study", "participant", "channel", "scope", "requested_at", "processed_by")
    list_filter = ("scope", "channel", "study")
    list_select_related = ("study", "participant__user")
    readonly_fields = (
        "participant",
        "study",
        "internal_id_sha256",
        "channel",
        "scope",
        "requested_at",
        "processed_at",
        "processed_by",
        "removed",
    )


@admin.register(RetentionPolicy)
class RetentionPolicyAdmin(ScopedAdminMixin, admin.ModelAdmin):
    list_display = ("study", "contact_days", "telemetry_days", "ip_log_days", "closed_at")
    readonly_fields = ("closed_at",)

    def save_model(
        self, request: HttpRequest, obj: RetentionPolicy, form: Any, change: bool
    ) -> None:
        super().save_model(request, obj, form, change)
        record_retention_change(obj, actor=request.user, fields=form.changed_data)
