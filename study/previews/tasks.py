"""Celery task of the design preview: a thin wrapper over ``services.run_preview``."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from study.previews.services import run_preview


@shared_task(name="study.run_design_preview")
def run_design_preview(preview_id: int) -> dict[str, Any]:
    """Run the design preview ``preview_id``. Idempotent: a claimed or finished one is skipped."""
    preview = run_preview(preview_id)
    return {"preview_id": preview.pk, "status": preview.status}
