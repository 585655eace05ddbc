"""Simulated allocation: the real assignment service run on a copy of a design inside a
transaction that is always rolled back, so nothing is left in the database.

A *design* is what assignment depends on: the tracks with their active pools and own targets,
the study's target, the arms' condition letters, the session plan, the balance priority, the
condition-order set and the replacement policy. ``study_design(study)`` reads it from a study;
``synthetic_design`` builds the one ``manage.py simulate_assignment`` describes with flags.

``simulate(design, dropout=..., seed=...)`` recruits like a live study: up to ``IN_FLIGHT``
participants are active at once; each newcomer joins the track furthest from its target (the
least-filled when no target is known), and either completes or, with probability ``dropout``,
drops out: half of the dropouts leave in session 1 (their plan is released and refilled by the
minimiser), half miss session 2 (with the replacement policy on, their plan goes to the track's
next newcomer). Recruitment goes on until the study's target has completed. The summary has
the totals and one block per track; ``expected_imbalance`` turns it into warnings.
"""

from __future__ import annotations

import logging
import math
import random
import secrets
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from study.assignment.balance import spread, track_table
from study.assignment.design import ALGORITHM_VERSION, Plan, TaskInfo, difficulty_gap
from study.assignment.minimiser import cell_shares
from study.assignment.services import (
    P_BEST,
    AssignmentError,
    assign_plan,
    release_plan,
    track_design,
)
from study.assignment.targets import Target, track_targets
from study.audit import log as audit
from study.journey.services import transition
from study.models import Arm, Assignment, Participant, Study, TaskPoolEntry, Track, User

IN_FLIGHT = 6
DIFFICULTIES = ("easy", "medium", "hard")
USE_SPREAD_LIMIT = 2  # within a track, task uses further apart than this are worth a warning
Stage = Participant.Stage


@dataclass(frozen=True)
class TrackSpec:
    code: str
    pool: tuple[tuple[str, str], ...]  # (template slug, difficulty) of the active entries
    target: int | None = None  # the track's own target, if the researcher set one


@dataclass(frozen=True)
class DesignSpec:
    tracks: tuple[TrackSpec, ...]
    target: int
    conditions: tuple[str, ...] = ("A", "B")
    sessions: int = 2
    trials_per_session: int = 2
    balance_priority: str = Study.BalancePriority.USES
    sequence_set: str = Study.SequenceSet.BALANCED
    replace_session2_no_shows: bool = True


def synthetic_design(
    *,
    tasks: int,
    participants: int,
    tracks: int = 1,
    balance_priority: str = Study.BalancePriority.USES,
    sequence_set: str = Study.SequenceSet.BALANCED,
) -> DesignSpec:
    """``tasks`` templates dealt round-robin over ``tracks`` tracks, difficulties cycling
    easy/medium/hard within each track; arms A and B, 2 sessions x 2 trials."""
    pools: list[list[tuple[str, str]]] = [[] for _ in range(tracks)]
    for i in range(tasks):
        pool = pools[i % tracks]
        pool.append((f"sim-task-{i + 1:02d}", DIFFICULTIES[len(pool) % 3]))
    codes = Track.Code.values[:tracks]
    return DesignSpec(
        tracks=tuple(TrackSpec(code, tuple(pool)) for code, pool in zip(codes, pools, strict=True)),
        target=participants,
        balance_priority=balance_priority,
        sequence_set=sequence_set,
    )


def study_design(study: Study) -> DesignSpec:
    """The design of ``study`` as it is configured now (active pool entries only)."""
    pools: dict[int, list[tuple[str, str]]] = {}
    for track_id, slug, difficulty in (
        study.pool.filter(active=True)
        .order_by("template_slug")
        .values_list("track", "template_slug", "difficulty")
    ):
        pools.setdefault(track_id, []).append((slug, difficulty))
    return DesignSpec(
        tracks=tuple(
            TrackSpec(t.code, tuple(pools.get(t.pk, ())), t.target_participants)
            for t in study.tracks.order_by("code")
        ),
        target=study.target_participants,
        conditions=tuple(sorted(study.arms.values_list("condition", flat=True))),
        sessions=study.sessions,
        trials_per_session=study.trials_per_session,
        balance_priority=study.balance_priority,
        sequence_set=study.sequence_set,
        replace_session2_no_shows=study.replace_session2_no_shows,
    )


class _Rollback(Exception):
    """Raised to undo the simulation's writes."""


@contextmanager
def _quiet() -> Iterator[None]:
    """A log line per synthetic assignment and move is noise here."""
    logs = [logging.getLogger(n) for n in ("study.assignment.services", "study.journey.services")]
    levels = [log.level for log in logs]
    for log in logs:
        log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for log, level in zip(logs, levels, strict=True):
            log.setLevel(level)


Progress = Callable[[int, int], None]  # (completed participants, target)


def simulate(
    design: DesignSpec,
    *,
    dropout: float,
    seed: int,
    on_progress: Progress | None = None,
    allocations: bool = False,
) -> dict[str, Any]:
    """Run the simulation and return its summary; every row it wrote is rolled back. Raises
    ``AssignmentError`` when the design cannot assign (e.g. a pool that is too small).
    ``allocations`` adds the allocation table: one row per assignment, in order."""
    result: dict[str, Any] = {}
    with _quiet(), audit.rolled_back():
        try:
            with transaction.atomic():
                result = _run(design, dropout, seed, on_progress, allocations)
                raise _Rollback
        except _Rollback:
            pass
    return result


def _make_study(design: DesignSpec) -> Study:
    study = Study.objects.create(
        slug=f"simulation-{secrets.token_hex(4)}",
        title="Assignment simulation",
        target_participants=design.target,
        overbooking=0,  # the recruitment loop never needs more than the target
        sessions=design.sessions,
        trials_per_session=design.trials_per_session,
        balance_priority=design.balance_priority,
        sequence_set=design.sequence_set,
        replace_session2_no_shows=design.replace_session2_no_shows,
    )
    for letter in design.conditions:
        mode = Arm.AIMode.NONE if letter == "A" else Arm.AIMode.CHAT
        Arm.objects.create(study=study, condition=letter, name=letter, ai_mode=mode)
    for spec in design.tracks:
        track = Track.objects.create(study=study, code=spec.code, target_participants=spec.target)
        TaskPoolEntry.objects.bulk_create(
            TaskPoolEntry(study=study, track=track, template_slug=slug, difficulty=difficulty)
            for slug, difficulty in spec.pool
        )
    return study


def _run(
    design: DesignSpec,
    dropout: float,
    seed: int,
    on_progress: Progress | None,
    allocations: bool,
) -> dict[str, Any]:
    study = _make_study(design)
    tracks = {t.code: t for t in study.tracks.all()}
    targets = track_targets(study)
    recruiting = [code for code in tracks if code in targets]  # tracks with active tasks
    if not recruiting:
        raise AssignmentError("No track has active tasks: add templates to a track's pool.")
    rng = random.Random(seed)
    now = timezone.now()
    in_flight: list[tuple[Participant, str]] = []
    completed: list[Participant] = []
    filled: Counter[str] = Counter()  # completed + in flight, per track
    fates: dict[int, str] = {}
    dropouts = enrolled = 0
    while len(completed) < design.target:
        while len(completed) + len(in_flight) < design.target and len(in_flight) < IN_FLIGHT:
            code = _next_track(recruiting, targets, filled)
            user = User.objects.create(username=f"{study.slug}-{enrolled}")
            participant = Participant.objects.create(
                study=study,
                user=user,
                internal_id=secrets.token_hex(8),
                track=tracks[code],
                session_index=1,
            )
            for stage in (Stage.CONSENTED, Stage.SCREENED, Stage.ASSIGNED):
                transition(participant, stage, "simulated", now=now)
            assign_plan(participant, rng_seed=rng.randrange(2**31), create_trials=False)
            enrolled += 1
            filled[code] += 1
            fate = "complete" if rng.random() >= dropout else rng.choice(("session1", "session2"))
            fates[participant.pk] = fate
            in_flight.append((participant, fate))
        participant, fate = in_flight.pop(rng.randrange(len(in_flight)))
        if fate == "complete":
            for stage in (Stage.IN_SESSION, Stage.POST_STUDY, Stage.COMPLETE):
                transition(participant, stage, "simulated", now=now)
            completed.append(participant)
            if on_progress is not None:
                on_progress(len(completed), design.target)
            continue
        dropouts += 1
        assert participant.track is not None
        filled[participant.track.code] -= 1
        if fate == "session2":  # finished session 1, never came back
            participant.session_index = 2
            participant.exclusion_reason = "session-2 no-show"
            fields = ("session_index", "exclusion_reason")
            transition(participant, Stage.EXCLUDED, "simulated", now=now, fields=fields)
        else:
            transition(participant, Stage.WITHDRAWN, "simulated", now=now)
        release_plan(participant)
    summary = _summary(study, design, completed, targets, dropouts, enrolled, seed, dropout)
    if allocations:
        summary["allocations"] = _allocations(study, fates)
    return summary


FATES = {
    "complete": "completed",
    "session1": "withdrew in session 1 (plan released)",
    "session2": "missed session 2",
}


def _allocations(study: Study, fates: dict[int, str]) -> list[dict[str, Any]]:
    """One row per simulated assignment, in the order they were made."""
    rows = list(Assignment.objects.filter(study=study).select_related("track").order_by("pk"))
    order = {a.pk: n for n, a in enumerate(rows, start=1)}
    return [
        {
            "order": order[a.pk],
            "track": a.track.code,
            "sequence": a.sequence,
            "tasks": list(a.tasks),
            "outcome": FATES[fates[a.participant_id]],
            "replaces": order.get(a.replaces_id) if a.replaces_id else None,
            "exact_fill": bool(a.counts_before.get("exact_fill")),
        }
        for a in rows
    ]


def _next_track(codes: list[str], targets: dict[str, Target], filled: Counter[str]) -> str:
    """The track furthest below its target; the least-filled one when none is below."""
    below = [c for c in codes if (targets[c].value or 0) > filled[c]]
    if below:
        return max(below, key=lambda c: ((targets[c].value or 0) - filled[c], -codes.index(c)))
    return min(codes, key=lambda c: (filled[c], codes.index(c)))


def _summary(
    study: Study,
    design: DesignSpec,
    completed: list[Participant],
    targets: dict[str, Target],
    dropouts: int,
    enrolled: int,
    seed: int,
    dropout: float,
) -> dict[str, Any]:
    rows = Assignment.objects.filter(study=study).select_related("track")
    done = {p.pk for p in completed}
    blocks = {
        spec.code: _track_block(study, spec, targets.get(spec.code), rows, done)
        for spec in design.tracks
        if spec.pool
    }
    task_condition: dict[str, dict[str, int]] = {}
    positions: dict[str, dict[str, int]] = {}
    for b in blocks.values():  # a cross-track template may be in several pools: add them up
        for slug, counts in b["task_condition_counts"].items():
            into = task_condition.setdefault(slug, dict.fromkeys(counts, 0))
            for key, n in counts.items():
                into[key] = into.get(key, 0) + n
        for slug, counts in b["position_counts"].items():
            into = positions.setdefault(slug, dict.fromkeys(counts, 0))
            for key, n in counts.items():
                into[key] = into.get(key, 0) + n
    sequences: Counter[str] = Counter()
    for b in blocks.values():
        sequences.update(b["sequence_counts"])
    spreads = [spread(v.values()) for v in task_condition.values()]
    return {
        "seed": seed,
        "tasks": sum(len(spec.pool) for spec in design.tracks),
        "tracks": len(blocks),
        "participants": design.target,
        "dropout": dropout,
        "p_best": P_BEST,
        "algorithm_version": ALGORITHM_VERSION,
        "balance_priority": design.balance_priority,
        "sequence_set": design.sequence_set,
        "completed": len(completed),
        "dropouts": dropouts,
        "assignments": enrolled,
        "replacements": sum(b["replacements"] for b in blocks.values()),
        "exact_fill_lost": sum(b["exact_fill_lost"] for b in blocks.values()),
        "equal_split": all(s == 0 for s in spreads),
        "max_task_condition_spread": max(spreads, default=0),
        "task_condition_counts": task_condition,
        "task_counts": {slug: sum(v.values()) for slug, v in task_condition.items()},
        "sequence_counts": dict(sorted(sequences.items())),
        "position_counts": positions,
        "difficulty": {s: d for spec in design.tracks for s, d in spec.pool},
        "pool_by_track": {code: list(b["task_counts"]) for code, b in blocks.items()},
        "by_track": blocks,
    }


def _track_block(
    study: Study, spec: TrackSpec, target: Target | None, rows: Any, done: set[int]
) -> dict[str, Any]:
    track_rows = [a for a in rows if a.track.code == spec.code]
    finished = [a for a in track_rows if a.participant_id in done]
    slugs = sorted(slug for slug, _ in spec.pool)
    letters = sorted(study.arms.values_list("condition", flat=True))
    periods = list(range(1, study.total_trials + 1))
    design = track_design(study, study.tracks.get(code=spec.code))
    table = track_table(  # the balance page's table, over the completers
        spec.code,
        [(slug, difficulty, True) for slug, difficulty in spec.pool],
        [(a.sequence, list(a.tasks), True) for a in finished],
        letters,
        periods,
        list(design.sequences),
    )
    by_slug = {row["slug"]: row for row in table["tasks"]}
    task_condition = {
        slug: dict(zip(letters, by_slug[slug]["counted"], strict=True)) for slug in slugs
    }
    position = {
        slug: {str(p): n for p, n in zip(periods, by_slug[slug]["positions"], strict=True)}
        for slug in slugs
    }
    uses = {slug: by_slug[slug]["uses"] for slug in slugs}
    levels = {slug: TaskInfo(slug, spec.code, d).level for slug, d in spec.pool}
    gaps = [difficulty_gap(Plan(a.sequence, tuple(a.tasks)), levels) for a in finished]
    value = target.value if target else None
    shares = cell_shares(design.candidates, value) if value is not None else None
    return {
        "target": value,
        "target_source": target.source if target else None,
        "exact_fill_possible": shares is not None,
        "target_multiple": _target_multiple(len(slugs), study.total_trials, len(letters)),
        "completed": len(finished),
        "assignments": len(track_rows),
        "replacements": sum(1 for a in track_rows if a.replaces_id is not None),
        "exact_fill_lost": sum(
            1
            for a in track_rows
            if a.replaces_id is None
            and a.counts_before.get("target") is not None
            and not a.counts_before.get("exact_fill")
        ),
        "task_condition_counts": task_condition,
        "task_counts": uses,
        "position_counts": position,
        "sequence_counts": {
            row["sequence"]: row["counted"]
            for row in sorted(table["sequences"], key=lambda row: row["sequence"])
            if row["counted"]
        },
        "max_task_condition_spread": max(
            (spread(v.values()) for v in task_condition.values()), default=0
        ),
        "task_use_spread": table["spread"]["task"],
        "sequence_spread": table["spread"]["sequence"],
        "difficulty_matched": sum(1 for g in gaps if g == 0),
        "mean_difficulty_gap": round(sum(gaps) / len(gaps), 3) if gaps else 0.0,
    }


def _target_multiple(tasks: int, periods: int, conditions: int) -> int:
    """The smallest track target whose task x condition cells all get a whole share."""
    per_condition = periods // max(conditions, 1)
    return tasks // math.gcd(tasks, per_condition) if tasks else 1


# --- Warnings ---------------------------------------------------------------------------
def expected_imbalance(summary: dict[str, Any]) -> list[str]:
    """What a researcher should know about the balance a design is expected to reach, one
    sentence per problem (empty when the simulated allocation is balanced)."""
    warnings: list[str] = []
    for code, block in summary["by_track"].items():
        target = block["target"]
        if target is None:
            warnings.append(
                f"Track {code}: no target is known (the tracks' own targets exceed the study's), "
                "so only minimisation balances it; exact balance needs a target."
            )
        elif not block["exact_fill_possible"]:
            warnings.append(
                f"Track {code}: a target of {target} cannot give every task the same number "
                f"of uses per condition with {len(block['task_counts'])} tasks; exact balance "
                f"needs a multiple of {block['target_multiple']}."
            )
        uses = block["task_counts"].values()
        if spread(uses) > USE_SPREAD_LIMIT:
            advice = (
                " Balancing task uses first would even them."
                if summary["balance_priority"] == Study.BalancePriority.DIFFICULTY
                else ""
            )
            warnings.append(
                f"Track {code}: task uses are expected to range from {min(uses)} to "
                f"{max(uses)} over {block['completed']} participants.{advice}"
            )
        if block["max_task_condition_spread"] > 1:
            warnings.append(
                f"Track {code}: a task's uses with and without AI are expected to differ by up "
                f"to {block['max_task_condition_spread']}."
            )
        if block["completed"] and block["difficulty_matched"] * 2 < block["completed"]:
            warnings.append(
                f"Track {code}: only {block['difficulty_matched']} of {block['completed']} "
                "participants are expected to get tasks of equal summed difficulty in both "
                "conditions (the pool's difficulties do not pair up)."
            )
    return warnings
