"""Counterbalanced assignment: which plans count, and the one service that assigns them.

The design and the minimiser are pure functions in :mod:`study.assignment.design`; this module reads
the database, holds the per-study lock and writes the audit trail.

Counting rules (``counted_assignments``). A plan counts for balance while its assignment is
neither ``released`` nor ``excluded_for_balance`` and its participant either

- is ``complete``, or
- is still active (any stage but complete/declined/withdrawn/excluded) and was active within
  the window: last activity (or, before any, the assignment itself) within
  ``gap_hours + window_hours + GRACE_HOURS``, or a next-session window that closed at most
  ``GRACE_HOURS`` ago. Abandoned plans therefore age out on their own and free their slot.

Releasing and replacing (``release_plan``, ``exclude_for_balance``). A dropout's or withdrawn
participant's plan is ``released``: the minimiser sees the freed cells and refills them. When a
participant finished session 1 and the study's ``replace_session2_no_shows`` is on, and when a
completed participant is excluded, the assignment is also marked ``excluded_for_balance``: the
next participant of the same track gets exactly that plan (``Assignment.replaces``).

Targets (``targets.track_targets``). Exact fill works per track: a track aims at its own target when
the researcher set one, otherwise at its share of the study's target. Each audit row records
the target it used and where it came from.
"""

from __future__ import annotations

import logging
import random
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, Literal

from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from evaluation.bank import BankError
from evaluation.instances import get_instance
from evaluation.services import record_instance
from study.assignment.design import (
    ALGORITHM_VERSION,
    Constraints,
    DesignError,
    Plan,
    TaskInfo,
    can_balance,
    condition_sequences,
    difficulty_gap,
    enumerate_plans,
)
from study.assignment.minimiser import Choice, Counts, choose_plan, imbalance
from study.assignment.targets import Target, track_target
from study.audit import log as audit
from study.models import (
    Assignment,
    AssignmentLock,
    Participant,
    Study,
    TaskPoolEntry,
    Track,
    Trial,
)

logger = logging.getLogger(__name__)

P_BEST = 0.9
GRACE_HOURS = 24
# Balance priority -> the difficulty rule of the enumeration. "difficulty": matched plans only
# whenever the pool has any; "uses": every plan, narrowed by ``_candidates`` to the smallest
# difficulty gap that can still balance.
DIFFICULTY_RULE: dict[str, Literal["if_possible", "off"]] = {
    "difficulty": "if_possible",
    "uses": "off",
}
Stage = Participant.Stage
ENDED_STAGES = (Stage.COMPLETE, Stage.DECLINED, Stage.WITHDRAWN, Stage.EXCLUDED)


class AssignmentError(Exception):
    """No plan can be assigned; the message is one sentence a researcher can act on."""


@dataclass(frozen=True)
class TrackDesign:
    pool: tuple[TaskInfo, ...]
    sequences: tuple[str, ...]
    candidates: tuple[Plan, ...]
    priority: str = "difficulty"
    gaps: tuple[int, ...] | None = None  # difficulty gap per candidate, when uses come first


# --- Counting ----------------------------------------------------------------------------
def activity_window(study: Study) -> timedelta:
    """How long an active participant's plan counts after their last activity."""
    return timedelta(hours=study.gap_hours + study.window_hours + GRACE_HOURS)


def counted_assignments(
    study: Study, track: Track | None = None, *, now: datetime | None = None
) -> QuerySet[Assignment]:
    now = now or timezone.now()
    cutoff = now - activity_window(study)
    recent = (
        Q(participant__last_activity_at__gte=cutoff)
        | Q(participant__last_activity_at__isnull=True, created_at__gte=cutoff)
        | Q(participant__next_session_closes_at__gte=now - timedelta(hours=GRACE_HOURS))
    )
    active = ~Q(participant__stage__in=ENDED_STAGES) & recent
    qs = Assignment.objects.filter(study=study, released=False, excluded_for_balance=False)
    qs = qs.filter(Q(participant__stage=Stage.COMPLETE) | active)
    return qs.filter(track=track) if track is not None else qs


def plan_of(assignment: Assignment) -> Plan:
    return Plan(assignment.sequence, tuple(assignment.tasks))


def study_sequences(study: Study, conditions: Sequence[str]) -> tuple[str, ...]:
    """The condition sequences of ``study``'s session plan and condition-order set (raises
    ``DesignError`` when the plan has none)."""
    return condition_sequences(
        conditions,
        study.sessions,
        study.trials_per_session,
        mirrored=study.sequence_set == Study.SequenceSet.MIRRORED,
    )


def track_design(study: Study, track: Track) -> TrackDesign:
    """The active pool of ``track``, the condition sequences and the admissible plans."""
    entries = TaskPoolEntry.objects.filter(study=study, track=track, active=True)
    pool = tuple(sorted(TaskInfo(e.template_slug, track.code, e.difficulty) for e in entries))
    conditions = sorted(study.arms.values_list("condition", flat=True))
    if not conditions:
        raise AssignmentError(f"Study {study.slug} has no arms (conditions) to assign.")
    if len(pool) < study.total_trials:
        raise AssignmentError(
            f"The {track.code} task pool has {len(pool)} active task(s), but each participant "
            f"needs {study.total_trials} different tasks."
        )
    try:
        sequences = study_sequences(study, conditions)
        return design_for(pool, sequences, study.total_trials, study.balance_priority)
    except DesignError as exc:
        raise AssignmentError(
            f"Study {study.slug} has no valid design ({track.code}): {exc}"
        ) from exc


def design_for(
    pool: tuple[TaskInfo, ...], sequences: tuple[str, ...], periods: int, priority: str
) -> TrackDesign:
    """The candidate plans of a pool under a balance priority (also used by ``replay``)."""
    if priority not in DIFFICULTY_RULE:
        raise DesignError(f"Unknown balance priority {priority!r}.")
    candidates, gaps = _candidates(pool, sequences, periods, priority)
    if not candidates:
        raise DesignError("no plan satisfies the design constraints")
    return TrackDesign(pool, sequences, candidates, priority, gaps)


@lru_cache(maxsize=32)
def _candidates(
    pool: tuple[TaskInfo, ...], sequences: tuple[str, ...], periods: int, priority: str
) -> tuple[tuple[Plan, ...], tuple[int, ...] | None]:
    constraints = Constraints(difficulty=DIFFICULTY_RULE[priority])
    plans = tuple(enumerate_plans(list(pool), sequences, periods, constraints))
    if priority != "uses":
        return plans, None
    # Uses first: the candidates are the plans within the smallest difficulty gap that can
    # still balance every cell (gap 0: matched plans only, when matching is free); among the
    # best-scoring ones the smaller gap wins.
    levels = {t.slug: t.level for t in pool}
    gaps = tuple(difficulty_gap(p, levels) for p in plans)
    for limit in sorted(set(gaps)):
        kept = [i for i, gap in enumerate(gaps) if gap <= limit]
        subset = tuple(plans[i] for i in kept)
        covers = len({t for p in subset for t in p.tasks}) == len(pool)
        if covers and (limit == max(gaps) or can_balance(subset)):
            return subset, (None if limit == 0 else tuple(gaps[i] for i in kept))
    return plans, gaps


def track_counts(
    study: Study, track: Track, design: TrackDesign, *, now: datetime | None = None
) -> Counts:
    counts = Counts.empty(design.candidates)
    for sequence, tasks in counted_assignments(study, track, now=now).values_list(
        "sequence", "tasks"
    ):
        counts.add(Plan(sequence, tuple(tasks)), known_only=True)
    return counts


# --- The service -------------------------------------------------------------------------
def lock_study(study: Study) -> AssignmentLock:
    """Serialise assignment per study until the surrounding transaction ends: a row lock on
    PostgreSQL; on SQLite (where SELECT ... FOR UPDATE is a no-op) a write to the lock row,
    which takes the database-wide write lock up front."""
    AssignmentLock.objects.get_or_create(study=study)
    lock = AssignmentLock.objects.select_for_update().get(study=study)
    if connection.vendor == "sqlite":
        AssignmentLock.objects.filter(pk=lock.pk).update(study=study)
    return lock


def assign_plan(
    participant: Participant,
    *,
    rng_seed: int | None = None,
    create_trials: bool = True,
    p_best: float = P_BEST,
    now: datetime | None = None,
) -> Assignment:
    """Give ``participant`` a counterbalanced plan (idempotent), write the audit row and, with
    ``create_trials``, the participant's trials, each with its own fresh task instance."""
    with transaction.atomic():
        study = participant.study
        lock_study(study)
        existing = Assignment.objects.filter(participant=participant).first()
        if existing is not None:
            return existing
        now = now or timezone.now()
        stage = Participant.objects.values_list("stage", flat=True).get(pk=participant.pk)
        if stage in ENDED_STAGES:
            raise AssignmentError(f"Participant {participant.pk} has ended ({stage}); no plan.")
        track = participant.track
        if track is None:
            raise AssignmentError(f"Participant {participant.pk} has no track yet.")
        cap = study.target_participants + study.overbooking
        if counted_assignments(study, now=now).count() >= cap:
            raise AssignmentError(
                f"Study {study.slug} already has {cap} counted participants (target "
                f"{study.target_participants} plus {study.overbooking} overbooking); "
                "assignment is closed."
            )
        design = track_design(study, track)
        counts = track_counts(study, track, design, now=now)
        seed = secrets.randbelow(2**31) if rng_seed is None else rng_seed
        target = track_target(study, track)
        replaced = replacement_for(study, track, design)
        if replaced is not None:
            plan = plan_of(replaced)
            choice = Choice(plan, imbalance(counts, plan), 1, 1, p_best)
        else:
            choice = choose_plan(
                design.candidates,
                counts,
                random.Random(seed),
                p_best,
                target=target.value,
                gaps=design.gaps,
            )
        assignment = Assignment.objects.create(
            participant=participant,
            study=study,
            track=track,
            sequence=choice.plan.sequence,
            tasks=list(choice.plan.tasks),
            seed=seed,
            counts_before=audit_snapshot(counts, design, target, choice),
            min_score=choice.min_score,
            n_tied=choice.n_tied,
            n_candidates=len(design.candidates),
            p_best=choice.p_best,
            algorithm_version=ALGORITHM_VERSION,
            replaces=replaced,
        )
        if create_trials:
            create_trials_for(participant, assignment)
        # Last in the transaction: the audit chain lock is held until commit.
        audit.record(
            audit.ASSIGNMENT,
            actor=None,
            object_type="participant",
            object_id=participant.pk,
            details={
                "study": study.slug,
                "assignment": assignment.pk,
                "track": track.code,
                "sequence": assignment.sequence,
                "tasks": assignment.tasks,
                "seed": seed,
                "algorithm_version": ALGORITHM_VERSION,
                "priority": design.priority,
                "target": target.value,
                "target_source": target.source,
                "replaces": replaced.pk if replaced else None,
            },
        )
        logger.info(
            "assignment study=%s participant=%s plan=%s %s seed=%s score=%s tied=%s replaces=%s",
            study.slug,
            participant.pk,
            choice.plan.sequence,
            ",".join(choice.plan.tasks),
            seed,
            choice.min_score,
            choice.n_tied,
            replaced.pk if replaced else None,
        )
        return assignment


def audit_snapshot(
    counts: Counts, design: TrackDesign, target: Target, choice: Choice
) -> dict[str, Any]:
    """``Assignment.counts_before``: the counts plus what a replay needs (pool, sequences,
    balance priority, target and where the target came from) and whether the exact-fill
    restriction applied."""
    return {
        **counts.to_json(),
        "pool": [[t.slug, t.difficulty] for t in design.pool],
        "sequences": list(design.sequences),
        "priority": design.priority,
        "target": target.value,
        "target_source": target.source,
        "exact_fill": choice.exact,
        "n_admissible": choice.n_admissible,
    }


def replay(assignment: Assignment) -> Choice:
    """Re-run the minimiser choice recorded in an audit row (rows with ``replaces`` set took
    the replaced plan instead). Rows written before the balance priority existed were
    assigned difficulty first. For reviewers and tests."""
    snap = assignment.counts_before
    pool = tuple(sorted(TaskInfo(slug, "", difficulty) for slug, difficulty in snap["pool"]))
    sequences = tuple(snap["sequences"])
    design = design_for(pool, sequences, len(sequences[0]), snap.get("priority", "difficulty"))
    return choose_plan(
        design.candidates,
        Counts.from_json(snap),
        random.Random(assignment.seed),
        assignment.p_best,
        target=snap["target"],
        gaps=design.gaps,
    )


def replacement_for(study: Study, track: Track, design: TrackDesign) -> Assignment | None:
    """The oldest plan marked for replacement in this track that nobody holds again yet and
    whose tasks are all still in the pool."""
    # A replacement holds its plan unless it was simply released (then the plan is free again).
    taken = (
        Assignment.objects.filter(replaces__isnull=False)
        .exclude(released=True, excluded_for_balance=False)
        .values("replaces")
    )
    queue = Assignment.objects.filter(study=study, track=track, excluded_for_balance=True).exclude(
        pk__in=taken
    )
    active = {t.slug for t in design.pool}
    for assignment in queue.order_by("created_at", "pk"):
        if set(assignment.tasks) <= active:
            return assignment
    return None


def create_trials_for(participant: Participant, assignment: Assignment) -> list[Trial]:
    """One trial per period, each with its own freshly seeded task instance."""

    study = assignment.study
    arms = {arm.condition: arm for arm in study.arms.all()}
    seeds: set[int] = set()
    trials = []
    for period, (slug, condition) in enumerate(
        zip(assignment.tasks, assignment.sequence, strict=True), start=1
    ):
        seed = secrets.randbelow(2**31)
        while seed in seeds:
            seed = secrets.randbelow(2**31)
        seeds.add(seed)
        try:
            instance = record_instance(get_instance(slug, seed))
        except BankError as exc:
            raise AssignmentError(f"Task {slug} cannot be instantiated: {exc}") from exc
        trials.append(
            Trial(
                participant=participant,
                session_index=(period - 1) // study.trials_per_session + 1,
                period=period,
                arm=arms[condition],
                template_slug=slug,
                seed=seed,
                instance=instance,
            )
        )
    return Trial.objects.bulk_create(trials)


def _finished_session_one(participant: Participant) -> bool:
    if participant.session_index >= 2:
        return True
    first = list(participant.trials.filter(session_index=1).values_list("status", flat=True))
    return bool(first) and all(s in (Trial.Status.SUBMITTED, Trial.Status.EXPIRED) for s in first)


@transaction.atomic
def release_plan(participant: Participant, *, replace: bool | None = None) -> Assignment | None:
    """Stop counting a dropout's or withdrawn participant's plan. ``replace`` (default: the
    study's ``replace_session2_no_shows`` policy, for participants who finished session 1)
    also queues the same plan for the next participant of the track."""
    lock_study(participant.study)
    assignment = Assignment.objects.filter(participant=participant).first()
    if assignment is None:
        return None
    if replace is None:
        replace = participant.study.replace_session2_no_shows and _finished_session_one(participant)
    assignment.released = True
    assignment.excluded_for_balance = assignment.excluded_for_balance or replace
    assignment.save(update_fields=["released", "excluded_for_balance"])
    logger.info(
        "plan released study=%s participant=%s replace=%s",
        participant.study.slug,
        participant.pk,
        replace,
    )
    return assignment


@transaction.atomic
def exclude_for_balance(participant: Participant) -> Assignment | None:
    """Exclude a (completed) participant from the balance counts; the next participant of the
    track gets the same plan. Reported in the methods as the replacement policy."""
    lock_study(participant.study)
    assignment = Assignment.objects.filter(participant=participant).first()
    if assignment is None:
        return None
    assignment.excluded_for_balance = True
    assignment.save(update_fields=["excluded_for_balance"])
    logger.info(
        "plan excluded for balance study=%s participant=%s", participant.study.slug, participant.pk
    )
    return assignment


TRACK_CHANGEABLE = (Participant.Stage.INVITED, Participant.Stage.CONSENTED)


@transaction.atomic
def override_track(participant: Participant, track: Track, *, by: audit.Actor) -> bool:
    """A researcher sets the participant's track before screening decides it (the screening
    answer is then ignored). False, and nothing changes, once the participant has a plan or
    for a track of another study."""
    participant = Participant.objects.select_for_update().get(pk=participant.pk)
    if participant.stage not in TRACK_CHANGEABLE or track.study_id != participant.study_id:
        return False
    track_before = participant.track.code if participant.track else None
    participant.track, participant.track_overridden = track, True
    participant.save(update_fields=["track", "track_overridden"])
    audit.record(
        audit.TRACK_OVERRIDE,
        actor=by,
        object_type="participant",
        object_id=participant.pk,
        details={"study": participant.study.slug, "track": track.code, "before": track_before},
    )
    return True
