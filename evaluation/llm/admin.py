"""Admin pages of the LLM arm (imported by ``evaluation.admin``).

Model endpoints are configured here (the one editable model), with a "Test connection" button
on an endpoint's page: a POST to ``<id>/test-connection/`` that makes one tiny request
(``evaluation.llm.endpoints.test_connection``) and reports the answer, latency and usage, or the
provider's error, as a message. The key is never shown: only whether its variable is set.
Everything else the arm records (datasets, sweeps, runs and their requests, interventions,
validations, template statuses, expert ratings) is evidence, visible and never edited here; the
researcher pages under /study/benchmarks/ and /study/reviews/ are where people work with it.
"""

from __future__ import annotations

import os
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db import models
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.urls import URLPattern, path

from evaluation.llm.client import endpoint_config
from evaluation.llm.endpoints import test_connection
from evaluation.models import (
    AgentRequest,
    AgentRun,
    Dataset,
    ExpertRating,
    Intervention,
    ModelEndpoint,
    Sweep,
    TemplateStatus,
    TemplateValidation,
)


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(admin.ModelAdmin):
    change_form_template = "admin/evaluation/modelendpoint/change_form.html"
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    list_display = (
        "name",
        "model",
        "base_url",
        "supports_tools",
        "supports_usage",
        "supports_vision",
        "price_input_per_mtok",
        "price_output_per_mtok",
        "requests_per_minute",
    )
    search_fields = ("name", "model", "base_url")
    readonly_fields = ("key_status", "created_at", "updated_at")
    fieldsets = (
        (None, {"fields": ("name", "base_url", "model", ("api_key_env", "key_status"))}),
        (
            "What the server supports",
            {"fields": ("supports_tools", "supports_usage", "supports_vision")},
        ),
        (
            "Prices and limits",
            {"fields": (("price_input_per_mtok", "price_output_per_mtok"), "requests_per_minute")},
        ),
        (None, {"fields": ("created_at", "updated_at")}),
    )

    @admin.display(description="key")
    def key_status(self, obj: ModelEndpoint) -> str:
        if not obj.api_key_env:
            return "no key (none is sent)"
        state = "is set" if os.environ.get(obj.api_key_env) else "is NOT set"
        return f"{obj.api_key_env} {state} in the web process's environment"

    def get_urls(self) -> list[URLPattern]:
        check = path(
            "<path:object_id>/test-connection/",
            self.admin_site.admin_view(self.test_connection_view),
            name="evaluation_modelendpoint_test_connection",
        )
        return [check, *super().get_urls()]

    def test_connection_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        endpoint = self.get_object(request, unquote(object_id))
        if endpoint is None:
            raise Http404("There is no such model endpoint.")
        if not self.has_change_permission(request, endpoint):
            raise PermissionDenied
        check = test_connection(endpoint_config(endpoint))
        if check.ok:
            messages.success(
                request,
                f"Connection test of {endpoint.name}: it answered “{check.text.strip()}” in "
                f"{check.latency_ms} ms, using {check.prompt_tokens} prompt and "
                f"{check.completion_tokens} completion tokens ({check.usage_source}).",
            )
        else:
            after = f" after {check.latency_ms} ms" if check.latency_ms else ""
            messages.error(
                request, f"Connection test of {endpoint.name} failed{after}: {check.error}"
            )
        return redirect("admin:evaluation_modelendpoint_change", endpoint.pk)


class RecordAdmin(admin.ModelAdmin):
    """What the LLM arm recorded: visible, never added, changed or deleted by hand."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class RecordInline(admin.TabularInline):
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Dataset)
class DatasetAdmin(RecordAdmin):
    list_display = ("short_version", "per_template", "first_seed", "size", "path", "created_at")

    @admin.display(description="version")
    def short_version(self, obj: Dataset) -> str:
        return obj.version[:12]

    @admin.display(description="instances")
    def size(self, obj: Dataset) -> int:
        return len(obj.instances or [])


@admin.register(Sweep)
class SweepAdmin(RecordAdmin):
    list_display = ("id", "endpoint", "condition", "purpose", "dataset", "samples", "attempts")
    list_filter = ("condition", "purpose", "endpoint")
    list_select_related = ("endpoint", "dataset")


class AgentRequestInline(RecordInline):
    model = AgentRequest
    fields = (
        "index",
        "status",
        "prompt_tokens",
        "completion_tokens",
        "cached_tokens",
        "usage_source",
        "finish_reason",
        "latency_ms",
        "retries",
        "error",
    )


class InterventionInline(RecordInline):
    model = Intervention
    fields = ("category", "source", "pattern", "message", "author", "delivered_at")


@admin.register(AgentRun)
class AgentRunAdmin(RecordAdmin):
    list_display = (
        "id",
        "sweep",
        "instance",
        "sample",
        "status",
        "stop_reason",
        "attempts_used",
        "prompt_tokens",
        "completion_tokens",
        "cost",
        "finished_at",
    )
    list_filter = ("status", "stop_reason", "sweep__condition")
    list_select_related = ("sweep__endpoint", "instance__template")
    inlines = [AgentRequestInline, InterventionInline]


@admin.register(AgentRequest)
class AgentRequestAdmin(RecordAdmin):
    list_display = (
        "run",
        "index",
        "status",
        "prompt_tokens",
        "completion_tokens",
        "usage_source",
        "latency_ms",
        "retries",
    )
    list_filter = ("status", "usage_source")


@admin.register(Intervention)
class InterventionAdmin(RecordAdmin):
    list_display = ("run", "category", "source", "pattern", "author", "delivered_at")
    list_filter = ("category", "source")


@admin.register(TemplateValidation)
class TemplateValidationAdmin(RecordAdmin):
    list_display = ("template", "role", "endpoint", "passed", "instances", "threshold")
    list_filter = ("role", "template__slug")


@admin.register(TemplateStatus)
class TemplateStatusAdmin(RecordAdmin):
    list_display = ("slug", "version", "status", "reason", "updated_at")
    list_filter = ("status",)


@admin.register(ExpertRating)
class ExpertRatingAdmin(RecordAdmin):
    list_display = ("instance", "reviewer", "criterion", "passed", "updated_at")
    list_filter = ("criterion", "passed")
