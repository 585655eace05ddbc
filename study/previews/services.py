"""Design previews: a simulated allocation of a study's design before recruitment, queued by
a researcher and run by the worker (``study.run_design_preview``).

The simulation (``study.assignment.simulation``) rolls back everything it writes, so a running
preview reports its progress through the cache, which the web and worker processes share.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from study.assignment.services import AssignmentError, track_design
from study.assignment.simulation import expected_imbalance, simulate, study_design
from study.models import DesignPreview, Study

logger = logging.getLogger(__name__)

PREVIEW_SEED = 1  # the default: the same design previews the same way until it changes
PREVIEW_PROGRESS_SECONDS = 3600


@transaction.atomic
def start_design_preview(study: Study, *, user: Any, seed: int | None = None) -> DesignPreview:
    """Queue a simulated allocation of ``study``'s design, for its target and expected
    dropout; the worker runs it once the row is committed."""
    from study.previews.tasks import run_design_preview  # cycle: the task wraps run_preview

    preview = DesignPreview.objects.create(
        study=study,
        seed=PREVIEW_SEED if seed is None else seed,
        dropout=study.expected_dropout,
        created_by=user.get_username(),
    )
    transaction.on_commit(lambda: run_design_preview.delay(preview.pk))
    return preview


def progress_key(preview_id: int) -> str:
    return f"design-preview-progress:{preview_id}"


def live_progress(preview: DesignPreview) -> int:
    """A running preview's progress. The simulation's writes are always rolled back, so it
    reports progress through the cache (shared by the web and worker processes), not its row."""
    if preview.status == DesignPreview.Status.RUNNING:
        return int(cache.get(progress_key(preview.pk), preview.progress))
    return preview.progress


def run_preview(preview_id: int, on_progress: Callable[[int], None] | None = None) -> DesignPreview:
    """Run a queued preview (idempotent: one already claimed or finished is returned as it
    is). Progress, the share of the target completed in the simulation, goes to the cache
    (``live_progress``) and to ``on_progress``. Any failure marks the preview failed."""
    claimed = DesignPreview.objects.filter(
        pk=preview_id, status=DesignPreview.Status.QUEUED
    ).update(status=DesignPreview.Status.RUNNING, started_at=timezone.now(), progress=0)
    preview = DesignPreview.objects.select_related("study").get(pk=preview_id)
    if not claimed:
        return preview
    key = progress_key(preview_id)

    def progress(done: int, total: int) -> None:
        percent = min(99, int(100 * done / max(total, 1)))
        cache.set(key, percent, PREVIEW_PROGRESS_SECONDS)
        if on_progress is not None:
            on_progress(percent)

    try:
        design = study_design(preview.study)
        summary = simulate(
            design,
            dropout=preview.dropout,
            seed=preview.seed,
            on_progress=progress,
            allocations=True,
        )
        summary["warnings"] = expected_imbalance(summary)
        summary["plans_per_track"] = {
            track.code: len(track_design(preview.study, track).candidates)
            for track in preview.study.tracks.order_by("code")
            if track.code in summary["by_track"]
        }
    except Exception as exc:  # a preview must end, whatever went wrong
        logger.exception("design preview %s failed", preview_id)
        message = str(exc) if isinstance(exc, AssignmentError) else f"{type(exc).__name__}: {exc}"
        preview.status, preview.error = DesignPreview.Status.FAILED, message[:1000]
    else:
        preview.status, preview.result, preview.progress = DesignPreview.Status.DONE, summary, 100
    preview.finished_at = timezone.now()
    preview.save(update_fields=["status", "error", "result", "progress", "finished_at"])
    cache.delete(key)
    return preview
