"""The live balance table of a study, for researchers (an admin page on the study).

``balance_table(study)`` is plain data (also usable in exports and tests): per track, the
sequence, task x condition and task x position counts over the participants the minimiser
counts now, next to the same counts over completers only. ``balance_view`` renders it with
``templates/study/admin/balance.html`` inside the admin.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse

from study.access import studies_for_researcher
from study.assignment.services import (
    GRACE_HOURS,
    AssignmentError,
    activity_window,
    counted_assignments,
    study_sequences,
    track_design,
)
from study.assignment.targets import track_targets
from study.models import Assignment, Participant, Study


def spread(values: Iterable[int]) -> int:
    """max - min of ``values`` (0 for none)."""
    values = list(values)
    return max(values) - min(values) if values else 0


def balance_table(study: Study) -> dict[str, Any]:
    """Balance of ``study`` now. Eight queries: arms, pool, counted plans, the tracks and their
    pools (exact-fill targets) and three totals."""
    conditions = sorted(study.arms.values_list("condition", flat=True))
    periods = list(range(1, study.total_trials + 1))
    try:
        sequences = list(study_sequences(study, conditions))
    except ValueError:
        sequences = []
    pool: dict[str, list[tuple[str, str, bool]]] = defaultdict(list)
    for code, slug, difficulty, active in study.pool.values_list(
        "track__code", "template_slug", "difficulty", "active"
    ).order_by("track__code", "template_slug"):
        pool[code].append((slug, difficulty, active))
    counted: dict[str, list[tuple[str, list[str], bool]]] = defaultdict(list)
    for code, sequence, tasks, stage in counted_assignments(study).values_list(
        "track__code", "sequence", "tasks", "participant__stage"
    ):
        counted[code].append((sequence, tasks, stage == Participant.Stage.COMPLETE))
    targets = track_targets(study)
    tracks = [
        {
            **track_table(
                code, pool.get(code, []), counted.get(code, []), conditions, periods, sequences
            ),
            "target": targets[code].value if code in targets else None,
            "target_text": targets[code].describe() if code in targets else "no active tasks",
        }
        for code in sorted(set(pool) | set(counted))
    ]
    all_rows = Assignment.objects.filter(study=study)
    return {
        "target": study.target_participants,
        "cap": study.target_participants + study.overbooking,
        "balance_priority": study.get_balance_priority_display(),
        "sequence_set": study.get_sequence_set_display(),
        "window_hours": activity_window(study).total_seconds() / 3600,
        "grace_hours": GRACE_HOURS,
        "conditions": conditions,
        "periods": periods,
        "counted": sum(t["counted"] for t in tracks),
        "completed": sum(t["completed"] for t in tracks),
        "released": all_rows.filter(released=True, excluded_for_balance=False).count(),
        "excluded_for_balance": all_rows.filter(excluded_for_balance=True).count(),
        "replacements": all_rows.filter(replaces__isnull=False).count(),
        "tracks": tracks,
    }


def track_table(
    code: str,
    pool: list[tuple[str, str, bool]],
    plans: list[tuple[str, list[str], bool]],
    conditions: list[str],
    periods: list[int],
    sequences: list[str],
) -> dict[str, Any]:
    by_condition: Counter[tuple[str, str]] = Counter()
    done_by_condition: Counter[tuple[str, str]] = Counter()
    by_position: Counter[tuple[str, int]] = Counter()
    seq_counted: Counter[str] = Counter()
    seq_done: Counter[str] = Counter()
    for sequence, tasks, complete in plans:
        seq_counted[sequence] += 1
        seq_done[sequence] += complete
        for pos, (slug, condition) in enumerate(zip(tasks, sequence, strict=True), start=1):
            by_condition[(slug, condition)] += 1
            done_by_condition[(slug, condition)] += complete
            by_position[(slug, pos)] += 1
    slugs = [slug for slug, _, _ in pool]
    extra = sorted({slug for _, tasks, _ in plans for slug in tasks} - set(slugs))
    meta = {slug: (difficulty, active) for slug, difficulty, active in pool}
    rows: list[dict[str, Any]] = []
    for slug in slugs + extra:
        difficulty, active = meta.get(slug, ("", False))
        rows.append(
            {
                "slug": slug,
                "difficulty": difficulty,
                "active": active,
                "counted": [by_condition[(slug, c)] for c in conditions],
                "completed": [done_by_condition[(slug, c)] for c in conditions],
                "positions": [by_position[(slug, p)] for p in periods],
                "uses": sum(by_condition[(slug, c)] for c in conditions),
            }
        )
    active_rows = [r for r in rows if r["active"]]
    return {
        "code": code,
        "counted": len(plans),
        "completed": sum(complete for _, _, complete in plans),
        "tasks": rows,
        "sequences": [
            {"sequence": s, "counted": seq_counted[s], "completed": seq_done[s]}
            for s in sorted(set(sequences) | set(seq_counted), key=_sequence_order(sequences))
        ],
        "spread": {
            "sequence": spread([seq_counted[s] for s in sequences]),
            "task": spread([r["uses"] for r in active_rows]),
            "task_condition": spread([n for r in active_rows for n in r["counted"]]),
            "task_position": spread([n for r in active_rows for n in r["positions"]]),
        },
    }


def _sequence_order(sequences: list[str]) -> Any:
    return lambda s: (sequences.index(s) if s in sequences else len(sequences), s)


def balance_context(study: Study) -> dict[str, Any]:
    """Template context for ``study/admin/balance.html``."""
    return {
        "study": study,
        "balance": balance_table(study),
        "title": f"Balance of {study.title}",
        "opts": Study._meta,
    }


def balance_view(request: HttpRequest, study_id: int) -> TemplateResponse:
    """Admin page (wrapped in ``admin_site.admin_view`` by ``StudyAdmin.get_urls``)."""
    study = get_object_or_404(studies_for_researcher(request.user), pk=study_id)
    context = {**admin.site.each_context(request), **balance_context(study)}
    return TemplateResponse(request, "study/admin/balance.html", context)


def design_summary(study: Study) -> list[dict[str, Any]]:
    """Per track: the active pool, the target and the number of admissible plans (or why
    there are none)."""
    targets = track_targets(study)
    tracks = []
    for track in study.tracks.order_by("code"):
        pool = list(
            study.pool.filter(track=track, active=True)
            .order_by("template_slug")
            .values_list("template_slug", "difficulty", "cross_track")
        )
        entry: dict[str, Any] = {
            "code": track.code,
            "pool": pool,
            "target": targets[track.code].describe()
            if track.code in targets
            else "no active tasks",
        }
        try:
            entry["plans"] = len(track_design(study, track).candidates)
        except AssignmentError as exc:
            entry["problem"] = str(exc)
        tracks.append(entry)
    return tracks
