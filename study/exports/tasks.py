"""Celery task of the export: a thin wrapper over :func:`study.exports.services.run_export`.

Progress goes to two places: the ``ExportJob`` row (what the researcher page polls) and the
task state (``PROGRESS`` with ``{"progress": percent, "note": table}``) for Flower and friends.
"""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task

from study.exports.services import run_export


@shared_task(bind=True, name="study.build_export")
def build_export(self: Task, export_id: int) -> dict[str, Any]:
    """Build the export job ``export_id``. Idempotent: a claimed or finished job is skipped."""

    def report(percent: int, note: str) -> None:
        if self.request.id and not self.request.is_eager:
            self.update_state(state="PROGRESS", meta={"progress": percent, "note": note})

    job = run_export(export_id, on_progress=report)
    return {"export_id": job.pk, "status": job.status, "sha256": job.sha256}
