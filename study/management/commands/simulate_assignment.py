"""``manage.py simulate_assignment --tasks 9 --participants 45 --dropout 0.15 --seed S [--json]``

Runs the real assignment service (:func:`study.assignment.services.assign_plan`) on a synthetic
study inside one transaction that is always rolled back, so researchers can check the balance a
design reaches before launching. Nothing is left in the database.

The synthetic study: ``--tracks`` tracks (default 1), ``--tasks`` templates dealt round-robin
over them with difficulties cycling easy/medium/hard within each track, arms A (no AI) and B
(AI), 2 sessions x 2 trials, target = ``--participants``. Recruitment mirrors a live study:
up to ``IN_FLIGHT`` participants are active at once, and new ones are enrolled while
completed + active < target. Each one either completes or (with probability ``--dropout``)
drops out: half of the dropouts leave in session 1 (their plan is released and refilled by the
minimiser), half miss session 2 (their plan goes to the next newcomer, the study's
replacement policy). Enrolment continues until ``--participants`` have completed.
"""

from __future__ import annotations

import json
import logging
import random
import secrets
from collections import Counter, defaultdict
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils import timezone

from study.assignment.design import ALGORITHM_VERSION
from study.assignment.services import P_BEST, AssignmentError, assign_plan, release_plan
from study.journey.services import transition
from study.models import Arm, Assignment, Participant, Study, TaskPoolEntry, Track, User

IN_FLIGHT = 6
DIFFICULTIES = ("easy", "medium", "hard")
Stage = Participant.Stage


class _Rollback(Exception):
    """Raised to undo the simulation's writes."""


def simulate(
    *, tasks: int, participants: int, dropout: float, seed: int, tracks: int = 1
) -> dict[str, Any]:
    """Run the simulation and return its summary; every row it wrote is rolled back."""
    result: dict[str, Any] = {}
    logs = [
        logging.getLogger(name) for name in ("study.assignment.services", "study.journey.services")
    ]
    levels = [log.level for log in logs]
    for log in logs:  # a line per synthetic assignment and move is noise here
        log.setLevel(logging.WARNING)
    try:
        with transaction.atomic():
            result = _run(tasks, participants, dropout, seed, tracks)
            raise _Rollback
    except _Rollback:
        pass
    finally:
        for log, level in zip(logs, levels, strict=True):
            log.setLevel(level)
    return result


def _make_study(tasks: int, participants: int, tracks: int) -> tuple[Study, list[Track]]:
    token = secrets.token_hex(4)
    study = Study.objects.create(
        slug=f"simulation-{token}",
        title="Assignment simulation",
        target_participants=participants,
        overbooking=0,  # the recruitment loop never needs more than the target
    )
    Arm.objects.create(study=study, condition="A", name="No AI", ai_mode=Arm.AIMode.NONE)
    Arm.objects.create(study=study, condition="B", name="AI", ai_mode=Arm.AIMode.CHAT)
    track_rows = [
        Track.objects.create(study=study, code=code) for code in Track.Code.values[:tracks]
    ]
    per_track: Counter[int] = Counter()
    for i in range(tasks):
        track = track_rows[i % tracks]
        TaskPoolEntry.objects.create(
            study=study,
            track=track,
            template_slug=f"sim-task-{i + 1:02d}",
            difficulty=DIFFICULTIES[per_track[track.pk] % 3],
        )
        per_track[track.pk] += 1
    return study, track_rows


def _run(tasks: int, participants: int, dropout: float, seed: int, tracks: int) -> dict[str, Any]:
    study, track_rows = _make_study(tasks, participants, tracks)
    rng = random.Random(seed)
    now = timezone.now()
    in_flight: list[tuple[Participant, str]] = []
    completed: list[Participant] = []
    dropouts = enrolled = 0
    while len(completed) < participants:
        while len(completed) + len(in_flight) < participants and len(in_flight) < IN_FLIGHT:
            user = User.objects.create(username=f"{study.slug}-{enrolled}")
            participant = Participant.objects.create(
                study=study,
                user=user,
                internal_id=secrets.token_hex(8),
                track=track_rows[enrolled % tracks],
                session_index=1,
            )
            for stage in (Stage.CONSENTED, Stage.SCREENED, Stage.ASSIGNED):
                transition(participant, stage, "simulated", now=now)
            assign_plan(participant, rng_seed=rng.randrange(2**31), create_trials=False)
            enrolled += 1
            fate = "complete" if rng.random() >= dropout else rng.choice(("session1", "session2"))
            in_flight.append((participant, fate))
        participant, fate = in_flight.pop(rng.randrange(len(in_flight)))
        if fate == "complete":
            for stage in (Stage.IN_SESSION, Stage.POST_STUDY, Stage.COMPLETE):
                transition(participant, stage, "simulated", now=now)
            completed.append(participant)
            continue
        dropouts += 1
        if fate == "session2":  # finished session 1, never came back
            participant.session_index = 2
            participant.exclusion_reason = "session-2 no-show"
            fields = ("session_index", "exclusion_reason")
            transition(participant, Stage.EXCLUDED, "simulated", now=now, fields=fields)
        else:
            transition(participant, Stage.WITHDRAWN, "simulated", now=now)
        release_plan(participant)
    return _summary(study, completed, dropouts, enrolled, seed, tasks, tracks, dropout)


def _summary(
    study: Study,
    completed: list[Participant],
    dropouts: int,
    enrolled: int,
    seed: int,
    tasks: int,
    tracks: int,
    dropout: float,
) -> dict[str, Any]:
    rows = Assignment.objects.filter(study=study)
    done = rows.filter(participant__in=completed)
    difficulty = dict(study.pool.values_list("template_slug", "difficulty"))
    task_condition: dict[str, dict[str, int]] = {
        slug: {"A": 0, "B": 0} for slug in sorted(difficulty)
    }
    position: dict[str, dict[str, int]] = {
        slug: {str(p): 0 for p in range(1, study.total_trials + 1)} for slug in sorted(difficulty)
    }
    sequences: Counter[str] = Counter()
    for a in done:
        sequences[a.sequence] += 1
        for pos, (slug, condition) in enumerate(zip(a.tasks, a.sequence, strict=True), start=1):
            task_condition[slug][condition] = task_condition[slug].get(condition, 0) + 1
            position[slug][str(pos)] += 1
    spreads = [max(v.values()) - min(v.values()) for v in task_condition.values()]
    uses = {slug: sum(v.values()) for slug, v in task_condition.items()}
    by_track: dict[str, list[str]] = defaultdict(list)
    for entry in study.pool.select_related("track").order_by("template_slug"):
        by_track[entry.track.code].append(entry.template_slug)
    return {
        "seed": seed,
        "tasks": tasks,
        "tracks": tracks,
        "participants": len(completed),
        "dropout": dropout,
        "p_best": P_BEST,
        "algorithm_version": ALGORITHM_VERSION,
        "completed": len(completed),
        "dropouts": dropouts,
        "assignments": enrolled,
        "replacements": rows.filter(replaces__isnull=False).count(),
        "exact_fill_lost": sum(
            1
            for snap in rows.filter(replaces__isnull=True).values_list("counts_before", flat=True)
            if snap.get("target") is not None and not snap.get("exact_fill")
        ),
        "equal_split": all(s == 0 for s in spreads),
        "max_task_condition_spread": max(spreads, default=0),
        "task_condition_counts": task_condition,
        "task_counts": uses,
        "sequence_counts": dict(sorted(sequences.items())),
        "position_counts": position,
        "difficulty": difficulty,
        "pool_by_track": dict(by_track),
    }


class Command(BaseCommand):
    help = (
        "Simulate counterbalanced assignment on a synthetic pool with dropouts, using the real "
        "assignment service inside a rolled-back transaction, and print the balance reached."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tasks", type=int, default=9, help="Templates in the pool.")
        parser.add_argument(
            "--participants", type=int, default=45, help="Completed participants to reach."
        )
        parser.add_argument(
            "--dropout", type=float, default=0.15, help="Probability that a participant drops."
        )
        parser.add_argument("--seed", type=int, default=1, help="Seed of the simulation.")
        parser.add_argument(
            "--tracks", type=int, default=1, help="Tracks the tasks are dealt over (1-3)."
        )
        parser.add_argument("--json", action="store_true", help="Print the summary as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        tracks, tasks = options["tracks"], options["tasks"]
        if not 1 <= tracks <= len(Track.Code.values):
            raise CommandError(f"--tracks must be between 1 and {len(Track.Code.values)}.")
        if options["participants"] < 1 or tasks < 1:
            raise CommandError("--tasks and --participants must be positive.")
        if not 0 <= options["dropout"] < 1:
            raise CommandError("--dropout must be at least 0 and below 1.")
        try:
            summary = simulate(
                tasks=tasks,
                participants=options["participants"],
                dropout=options["dropout"],
                seed=options["seed"],
                tracks=tracks,
            )
        except AssignmentError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(summary, indent=2))
            return
        self._print_table(summary)

    def _print_table(self, s: dict[str, Any]) -> None:
        self.stdout.write(
            f"{s['completed']} completed, {s['dropouts']} dropouts, {s['assignments']} "
            f"assignments ({s['replacements']} replacements), seed {s['seed']}"
        )
        periods = len(next(iter(s["position_counts"].values()), {}))
        header = f"{'task':<14}{'diff':<8}{'A':>4}{'B':>4}  " + "".join(
            f"P{p:<3}" for p in range(1, periods + 1)
        )
        self.stdout.write(header)
        for slug, by_condition in s["task_condition_counts"].items():
            positions = "".join(f"{n:<4}" for n in s["position_counts"][slug].values())
            self.stdout.write(
                f"{slug:<14}{s['difficulty'][slug]:<8}{by_condition['A']:>4}"
                f"{by_condition['B']:>4}  {positions}"
            )
        seqs = ", ".join(f"{k} {v}" for k, v in s["sequence_counts"].items())
        self.stdout.write(f"sequences: {seqs}")
        verdict = "equal" if s["equal_split"] else f"spread up to {s['max_task_condition_spread']}"
        self.stdout.write(f"AI/no-AI split per task: {verdict}")
