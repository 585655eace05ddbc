"""Export services: start a job (researcher UI), build it (worker), export from the command
line. Every finished export is recorded in the audit log: profile, options, row counts, file
hashes and who."""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from study.audit import log as audit
from study.exports.package import PackageResult, build_package, make_zip
from study.exports.pseudonyms import default_scope
from study.models import ExportJob, Study, User

if TYPE_CHECKING:
    from study.audit.log import Actor

logger = logging.getLogger(__name__)
EXPORTS_DIR = "exports"
MAX_ERROR = 500


def audit_details(result: PackageResult, *, zip_sha256: str = "") -> dict[str, Any]:
    """What the audit log keeps about an export (identifiers, counts and hashes only)."""
    manifest, deid = result.manifest, result.deid_report
    k = deid.get("k_anonymity") or {}
    return {
        "profile": manifest["profile"],
        "export_id": manifest["export_id"],
        "options": manifest["options"],
        "key_id": manifest["key_id"],
        "row_counts": manifest["row_counts"],
        "files": {f.path: f.sha256 for f in result.files},
        "k_achieved": k.get("k_achieved"),
        "n_withdrawn_excluded": deid["n_withdrawn_excluded"],
        "n_withdrawn_kept": deid["n_withdrawn_kept"],
        "zip_sha256": zip_sha256,
    }


def summary(result: PackageResult) -> dict[str, Any]:
    k = result.deid_report.get("k_anonymity") or {}
    return {
        "row_counts": result.row_counts,
        "k_target": k.get("k_target"),
        "k_achieved": k.get("k_achieved"),
        "n_participants": result.deid_report["participants"].get("n_included", 0),
        "n_withdrawn_excluded": result.deid_report["n_withdrawn_excluded"],
        "n_withdrawn_kept": result.deid_report["n_withdrawn_kept"],
        "key_id": result.manifest["key_id"],
        "package": result.manifest["package"],
    }


def export_to_directory(
    study: Study,
    profile: str,
    out_dir: Path,
    *,
    scope: str | None = None,
    make_zip_file: bool = False,
    actor: Actor = None,
    role: str = "command line",
    progress: Callable[[float, str], None] | None = None,
) -> tuple[PackageResult, Path | None]:
    """Write the package to ``out_dir`` (and ``<out_dir>.zip``), then audit it."""
    result = build_package(
        study, profile, out_dir, scope=scope, created_by_role=role, progress=progress
    )
    zip_path, zip_sha = None, ""
    if make_zip_file:
        zip_path = out_dir.with_name(out_dir.name + ".zip")
        zip_sha = make_zip(out_dir, zip_path, result.manifest["package"])
    with transaction.atomic():
        audit.record(
            audit.EXPORT,
            actor=actor,
            object_type="study",
            object_id=study.slug,
            details=audit_details(result, zip_sha256=zip_sha),
        )
    return result, zip_path


@transaction.atomic
def start_export(study: Study, profile: str, *, user: Any, scope: str = "") -> ExportJob:
    """Queue an export job; the worker builds it (enqueued once the job row is committed)."""
    from study.exports.tasks import build_export  # cycle: the task wraps this module's run_export

    if profile not in ExportJob.Profile.values:
        raise ValueError(f"Unknown export profile {profile!r}.")
    job = ExportJob.objects.create(
        study=study,
        profile=profile,
        scope=scope.strip() or default_scope(study.slug, profile),
        created_by=user.get_username(),
    )
    transaction.on_commit(lambda: build_export.delay(job.pk))
    return job


def _set(job: ExportJob, **fields: Any) -> None:
    for name, value in fields.items():
        setattr(job, name, value)
    job.save(update_fields=list(fields))


def run_export(job_id: int, on_progress: Callable[[int, str], None] | None = None) -> ExportJob:
    """Build a queued job into ``MEDIA_ROOT/exports/<package>_job<id>.zip``. Idempotent: a
    job another worker claimed, or one already finished, is returned unchanged."""
    claimed = ExportJob.objects.filter(pk=job_id, status=ExportJob.Status.QUEUED).update(
        status=ExportJob.Status.RUNNING, started_at=timezone.now(), progress=0
    )
    job = ExportJob.objects.select_related("study").get(pk=job_id)
    if claimed != 1:
        return job
    media = Path(settings.MEDIA_ROOT)
    (media / EXPORTS_DIR).mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix=".building-", dir=media / EXPORTS_DIR))
    last = [-1]

    def progress(fraction: float, note: str) -> None:
        percent = int(fraction * 100)
        if percent != last[0]:
            last[0] = percent
            ExportJob.objects.filter(pk=job.pk).update(progress=percent, progress_note=note[:100])
            if on_progress:
                on_progress(percent, note)

    try:
        result = build_package(
            job.study,
            job.profile,
            workdir / "package",
            scope=job.scope,
            created_by_role="researcher",
            export_id=f"job-{job.pk}",
            progress=progress,
        )
        name = f"{result.manifest['package']}_job{job.pk}.zip"
        zip_path = media / EXPORTS_DIR / name
        sha = make_zip(workdir / "package", zip_path, result.manifest["package"])
        with transaction.atomic():
            _set(
                job,
                status=ExportJob.Status.DONE,
                progress=100,
                progress_note="ready",
                zip_path=f"{EXPORTS_DIR}/{name}",
                sha256=sha,
                size_bytes=zip_path.stat().st_size,
                summary=summary(result),
                finished_at=timezone.now(),
            )
            audit.record(
                audit.EXPORT,
                actor=_staff(job.created_by),
                object_type="study",
                object_id=job.study.slug,
                details={"job": job.pk, **audit_details(result, zip_sha256=sha)},
            )
    except Exception as exc:  # the job records why; the worker stays up
        logger.exception("export job %s failed", job.pk)
        _set(
            job,
            status=ExportJob.Status.FAILED,
            error=f"{exc.__class__.__name__}: {exc}"[:MAX_ERROR],
            finished_at=timezone.now(),
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return job


def _staff(username: str) -> Any:

    return User.objects.filter(username=username).first()


def zip_file(job: ExportJob) -> Path | None:
    """The job's zip on disk, if it is ready and still there."""
    if job.status != ExportJob.Status.DONE or not job.zip_path:
        return None
    path = (Path(settings.MEDIA_ROOT) / job.zip_path).resolve()
    root = (Path(settings.MEDIA_ROOT) / EXPORTS_DIR).resolve()
    return path if path.is_file() and root in path.parents else None


@transaction.atomic
def open_package(job: ExportJob, *, actor: audit.Actor) -> Path | None:
    """The job's zip for a download, recorded in the audit log; None if there is none."""
    path = zip_file(job)
    if path is not None:
        audit.record(
            "export_download",
            actor=actor,
            object_type="export",
            object_id=job.pk,
            details={"study": job.study.slug, "profile": job.profile, "sha256": job.sha256},
        )
    return path
