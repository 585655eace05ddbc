"""Frozen, hashed configuration snapshots.

A participant's row points at the snapshot taken when they joined. Editing the study later makes
a new snapshot version for new participants; earlier participants keep what they saw.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from django.db import transaction

from evaluation.llm.client import endpoint_config
from study.models import Arm, ConfigSnapshot, Study
from study.results.plan import analysis_plan

# The arm's own fields a snapshot freezes; ``arm_fields`` adds its model endpoint.
ARM_FIELDS = (
    "name",
    "ai_mode",
    "ide",
    "time_limit_min",
    "ai_provider",
    "token_cap",
    "submission_channels",
)


def arm_fields(arm: Arm) -> dict[str, Any]:
    """An arm's settings as plain JSON: ``ARM_FIELDS``, ``ai_endpoint`` (the endpoint's settings,
    ``EndpointConfig.to_json()``, or None) and ``model`` (its model id, "" without one)."""
    endpoint = endpoint_config(arm.ai_endpoint) if arm.ai_endpoint is not None else None
    return {
        **{name: getattr(arm, name) for name in ARM_FIELDS},
        "ai_endpoint": endpoint.to_json() if endpoint else None,
        "model": endpoint.model if endpoint else "",
    }


def study_config(study: Study) -> dict[str, Any]:
    """Everything about the study that shapes a participant's experience, as plain JSON."""
    return {
        "slug": study.slug,
        "title": study.title,
        "sessions": study.sessions,
        "trials_per_session": study.trials_per_session,
        "gap_hours": study.gap_hours,
        "window_hours": study.window_hours,
        "report_release": study.report_release,
        "withdrawal_policy": study.withdrawal_policy,
        "replace_session2_no_shows": study.replace_session2_no_shows,
        "design": {
            "sequence_set": study.sequence_set,
            "balance_priority": study.balance_priority,
            "target_participants": study.target_participants,
            "track_targets": {t.code: t.target_participants for t in study.tracks.order_by("code")},
        },
        "consent": (
            {"version": study.consent_form.version, "sha256": study.consent_form.content_sha256}
            if study.consent_form
            else None
        ),
        "questionnaires": {
            kind: (str(version.questionnaire.slug), version.version) if version else None
            for kind, version in (
                ("screening", study.screening),
                ("post_trial", study.post_trial),
                ("post_study", study.post_study),
            )
        },
        "tracks": sorted(t.code for t in study.tracks.all()),
        "arms": {
            arm.condition: arm_fields(arm) for arm in study.arms.select_related("ai_endpoint")
        },
        "analysis_plan": analysis_plan(study),
        "pool": sorted(
            [
                e.track.code,
                e.template_slug,
                e.difficulty,
                *(["cross-track"] if e.cross_track else []),
            ]
            for e in study.pool.select_related("track").filter(active=True)
        ),
    }


def config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


@transaction.atomic
def current_snapshot(study: Study) -> ConfigSnapshot:
    """The snapshot matching the study's configuration now; a new version if it changed."""
    Study.objects.select_for_update().filter(pk=study.pk).first()  # serialise snapshotting
    config = study_config(study)
    digest = config_hash(config)
    latest = study.snapshots.order_by("-version").first()
    if latest is not None and latest.sha256 == digest:
        return latest
    version = (latest.version + 1) if latest else 1
    return ConfigSnapshot.objects.create(
        study=study, version=version, content=config, sha256=digest
    )


def arm_settings(
    content: Mapping[str, Any] | None, condition: str, current: Mapping[str, Any]
) -> dict[str, Any]:
    """The settings of arm ``condition`` as a snapshot's ``content`` froze them; ``current``
    (the arm's settings now) for what the snapshot does not have (no snapshot yet, or a field
    added later). The one place that reads frozen arms."""
    frozen = ((content or {}).get("arms") or {}).get(condition) or {}
    return {**current, **frozen}


def frozen_arm(content: Mapping[str, Any] | None, arm: Arm) -> dict[str, Any]:
    return arm_settings(content, arm.condition, arm_fields(arm))
