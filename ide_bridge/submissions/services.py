"""Submitting a trial with a workspace archive (the ``submit`` script, or any HTTP client).

The archive is checked in memory (:mod:`ide_bridge.submissions.archives`), kept exactly as received
in a ``WorkspaceUpload`` and its editable files (every one the task has, e.g. ``solution.py``, or
``app/pricing.py`` and ``app/rules.py``) are submitted through the study's own service, so the
trial's rules (one submission, the deadline, the size limits) apply unchanged. The archive's other
files (read-only task files, notes, tests of their own) are listed in the manifest and ignored:
grading always takes them from the instance. Uploading the same bytes again is a retry and returns
the first upload.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from django.db import transaction

from ide_bridge.models import WorkspaceUpload
from ide_bridge.submissions.archives import ArchiveRejected, read_workspace_archive
from study.models import Arm, Trial
from study.trials.files import FilesRefused, editable_paths
from study.trials.services import (
    TrialClosed,
    check_channel,
    close_overdue_trial,
    submit_trial,
)

SUBMISSION_LABEL = "participant:archive"


def submit_archive(
    trial: Trial, data: bytes, filename: str, now: datetime
) -> tuple[WorkspaceUpload, bool]:
    """Store the archive and submit its editable files; ``(upload, False)`` for a retry.

    Raises ``ChannelNotAllowed`` when the trial's arm takes no archives (before the archive
    is opened), ``ArchiveRejected`` for an unacceptable archive and ``TrialClosed`` when the
    trial no longer takes a submission (nothing is stored then).
    """
    check_channel(trial, Arm.Channel.SCRIPT)
    try:
        return _submit_archive(trial, data, filename, now)
    except TrialClosed:
        # ``submit_trial`` closes an overdue trial before refusing, but its refusal rolls that
        # back; close it again in a transaction of its own (a no-op unless overdue).
        close_overdue_trial(trial, now)
        raise


@transaction.atomic
def _submit_archive(
    trial: Trial, data: bytes, filename: str, now: datetime
) -> tuple[WorkspaceUpload, bool]:
    digest = hashlib.sha256(data).hexdigest()
    if (existing := _upload(trial, digest)) is not None:
        return existing, False
    editable = editable_paths(trial)
    workspace = read_workspace_archive(data, filename, editable)  # before taking any lock
    files = {path: workspace.files[path] for path in editable}
    # One upload of a trial at a time: a concurrent retry of the same archive waits here and
    # then finds the first one instead of hitting the unique constraint.
    list(Trial.objects.select_for_update().filter(pk=trial.pk).values_list("pk", flat=True))
    if (existing := _upload(trial, digest)) is not None:
        return existing, False
    upload = WorkspaceUpload.objects.create(
        trial=trial,
        sha256=digest,
        archive=data,
        size=len(data),
        files=workspace.manifest(),
    )
    try:
        submit_trial(trial, files, now, channel=Arm.Channel.SCRIPT, label=SUBMISSION_LABEL)
    except FilesRefused as exc:  # not UTF-8, too large: the same sentences as the browser's
        raise ArchiveRejected(str(exc)) from None
    return upload, True


def _upload(trial: Trial, digest: str) -> WorkspaceUpload | None:
    return WorkspaceUpload.objects.filter(trial=trial, sha256=digest).first()
