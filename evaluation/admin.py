"""Admin pages for the engine: templates, instances, calibrations, submissions, evaluations.

All read-only: these rows are evidence of what was graded and how. The LLM arm's pages (model
endpoints, editable, and its records) are in ``evaluation.llm.admin``, imported here so that
the admin's autodiscovery registers them.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from evaluation.llm import admin as llm_admin
from evaluation.models import Calibration, Evaluation, Submission, TaskInstance, TaskTemplate

__all__ = ["llm_admin"]


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def pretty_json(value: Any) -> str:
    return format_html("<pre style='white-space:pre-wrap'>{}</pre>", json.dumps(value, indent=2))


@admin.register(TaskTemplate)
class TaskTemplateAdmin(ReadOnlyAdmin):
    list_display = ("slug", "version", "title", "track", "difficulty", "short_hash", "created_at")
    list_filter = ("track", "difficulty")
    search_fields = ("slug", "title")

    @admin.display(description="content hash")
    def short_hash(self, obj: TaskTemplate) -> str:
        return obj.content_hash[:12]


@admin.register(TaskInstance)
class TaskInstanceAdmin(ReadOnlyAdmin):
    list_display = ("template", "seed", "created_at")
    list_filter = ("template__slug",)
    readonly_fields = ("template", "seed", "content_hash", "parameters", "created_at")
    exclude = ("params",)

    @admin.display(description="parameters, constraint, context and names")
    def parameters(self, obj: TaskInstance) -> str:
        return pretty_json(obj.params)


@admin.register(Calibration)
class CalibrationAdmin(ReadOnlyAdmin):
    list_display = ("template", "status", "backend", "host", "ratio", "created_at")
    list_filter = ("status", "backend", "template__slug")
    readonly_fields = (
        "template",
        "status",
        "message",
        "backend",
        "host_fingerprint",
        "perf_fingerprint",
        "measurements",
        "created_at",
    )
    exclude = ("data",)

    @admin.display(description="host")
    def host(self, obj: Calibration) -> str:
        return obj.host_fingerprint[:12]

    @admin.display(description="naive/efficient")
    def ratio(self, obj: Calibration) -> str:
        value = (obj.data or {}).get("ratio")
        return f"{value:.1f}" if isinstance(value, int | float) else "-"

    @admin.display(description="measurements")
    def measurements(self, obj: Calibration) -> str:
        return pretty_json(obj.data)


@admin.register(Submission)
class SubmissionAdmin(ReadOnlyAdmin):
    list_display = ("id", "instance", "source_label", "short_sha", "created_at")
    list_filter = ("source_label",)
    readonly_fields = ("instance", "source_label", "sha256", "code", "created_at")
    exclude = ("files",)

    @admin.display(description="sha256")
    def short_sha(self, obj: Submission) -> str:
        return obj.sha256[:12]

    @admin.display(description="files")
    def code(self, obj: Submission) -> str:
        return format_html_join(
            "", "<h4>{}</h4><pre>{}</pre>", sorted(dict(obj.files or {}).items())
        )


@admin.register(Evaluation)
class EvaluationAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "submission",
        "status",
        "overall_pass",
        "partial_pass",
        "progress",
        "finished_at",
    )
    list_filter = ("status",)
    readonly_fields = (
        "submission",
        "status",
        "tests_done",
        "tests_total",
        "error",
        "duration_s",
        "tokens",
        "created_at",
        "started_at",
        "finished_at",
        "report_json",
    )
    exclude = ("report",)

    @admin.display(description="overall pass", boolean=True)
    def overall_pass(self, obj: Evaluation) -> bool | None:
        return (obj.report or {}).get("overall_pass")

    @admin.display(description="partial pass")
    def partial_pass(self, obj: Evaluation) -> str:
        value = (obj.report or {}).get("partial_pass")
        return f"{value:.2f}" if isinstance(value, int | float) else "-"

    @admin.display(description="tests")
    def progress(self, obj: Evaluation) -> str:
        return f"{obj.tests_done}/{obj.tests_total}"

    @admin.display(description="report")
    def report_json(self, obj: Evaluation) -> str:
        return pretty_json(obj.report)
