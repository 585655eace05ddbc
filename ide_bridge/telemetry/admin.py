"""Read-only admin views of telemetry: events and integrity flags, scoped to the researcher's
studies (the replay page is the friendlier way to read a trial's events)."""

from __future__ import annotations

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from ide_bridge.models import IntegrityFlag, TrialEvent
from study.access.admin import ScopedAdminMixin
from study.readonly import ReadOnlyAdmin


class _ReadOnlyTrialScopedAdmin(ScopedAdminMixin, ReadOnlyAdmin):
    list_select_related = ("trial__participant__user", "trial__arm")
    list_per_page = 200
    study_path = "trial__participant__study"

    @admin.display(description="replay")
    def replay_link(self, obj: TrialEvent | IntegrityFlag) -> str:
        seq = obj.seq if isinstance(obj, TrialEvent) else obj.event_seq
        url = reverse("ide_bridge:replay", args=[obj.trial_id])
        return format_html('<a href="{}#seq={}">replay</a>', url, seq or "")


@admin.register(TrialEvent)
class TrialEventAdmin(_ReadOnlyTrialScopedAdmin):
    list_display = ("trial", "seq", "kind", "client_ts", "server_ts", "replay_link")
    list_filter = ("kind",)
    search_fields = ("=trial__id",)
    readonly_fields = ("trial", "seq", "kind", "client_ts", "server_ts", "payload")
    show_full_result_count = False  # counting millions of events on every page is slow


@admin.register(IntegrityFlag)
class IntegrityFlagAdmin(_ReadOnlyTrialScopedAdmin):
    list_display = ("trial", "kind", "event_seq", "detail", "created_at", "replay_link")
    list_filter = ("kind", "trial__participant__study")
    search_fields = ("=trial__id",)
    readonly_fields = ("trial", "kind", "detail", "event_seq", "created_at")
