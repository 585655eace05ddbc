"""``manage.py simulate_assignment --tasks 9 --participants 45 --dropout 0.15 --seed S [--json]``

Runs the real assignment service (:func:`study.assignment.services.assign_plan`) on a design
inside one transaction that is always rolled back (``study.assignment.simulation``), so
researchers can check the balance a design reaches before launching. Nothing is left in the
database.

Either a synthetic design: ``--tracks`` tracks (default 1), ``--tasks`` templates dealt
round-robin over them with difficulties cycling easy/medium/hard within each track, arms A
(no AI) and B (AI), 2 sessions x 2 trials, target = ``--participants`` (shared equally by the
tracks), ``--priority`` and ``--orders`` as the study settings of those names; or
``--study SLUG``: that study's design as configured now (pools, targets, settings; its
expected dropout unless ``--dropout`` is given). The JSON has the totals and a ``by_track``
block per track.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from study.assignment.services import AssignmentError
from study.assignment.simulation import (
    expected_imbalance,
    simulate,
    study_design,
    synthetic_design,
)
from study.models import Study, Track


class Command(BaseCommand):
    help = (
        "Simulate counterbalanced assignment on a synthetic pool with dropouts, using the real "
        "assignment service inside a rolled-back transaction, and print the balance reached."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--study", help="Simulate this study's design (slug) instead of a synthetic one."
        )
        parser.add_argument("--tasks", type=int, default=9, help="Templates in the pool.")
        parser.add_argument(
            "--participants", type=int, default=45, help="Completed participants to reach."
        )
        parser.add_argument(
            "--dropout",
            type=float,
            default=None,
            help="Probability that a participant drops (default 0.15, or the study's).",
        )
        parser.add_argument("--seed", type=int, default=1, help="Seed of the simulation.")
        parser.add_argument(
            "--tracks", type=int, default=1, help="Tracks the tasks are dealt over (1-3)."
        )
        parser.add_argument(
            "--priority",
            choices=Study.BalancePriority.values,
            default=Study.BalancePriority.USES,
            help="Balance task uses first, or match difficulty first.",
        )
        parser.add_argument(
            "--orders",
            choices=Study.SequenceSet.values,
            default=Study.SequenceSet.BALANCED,
            help="Condition orders: balanced (ABBA, BAAB, ABAB, BABA) or mirrored (ABBA, BAAB).",
        )
        parser.add_argument("--json", action="store_true", help="Print the summary as JSON.")

    def handle(self, *args: Any, **options: Any) -> None:
        dropout = options["dropout"]
        if options["study"]:
            study = Study.objects.filter(slug=options["study"]).first()
            if study is None:
                raise CommandError(f"There is no study with the slug {options['study']!r}.")
            design = study_design(study)
            dropout = study.expected_dropout if dropout is None else dropout
        else:
            tracks, tasks = options["tracks"], options["tasks"]
            if not 1 <= tracks <= len(Track.Code.values):
                raise CommandError(f"--tracks must be between 1 and {len(Track.Code.values)}.")
            if options["participants"] < 1 or tasks < 1:
                raise CommandError("--tasks and --participants must be positive.")
            design = synthetic_design(
                tasks=tasks,
                participants=options["participants"],
                tracks=tracks,
                balance_priority=options["priority"],
                sequence_set=options["orders"],
            )
        dropout = 0.15 if dropout is None else dropout
        if not 0 <= dropout < 1:
            raise CommandError("--dropout must be at least 0 and below 1.")
        try:
            summary = simulate(design, dropout=dropout, seed=options["seed"])
        except AssignmentError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(summary, indent=2))
            return
        self._print_table(summary)

    def _print_table(self, s: dict[str, Any]) -> None:
        self.stdout.write(
            f"{s['completed']} completed, {s['dropouts']} dropouts, {s['assignments']} "
            f"assignments ({s['replacements']} replacements), seed {s['seed']}, "
            f"{s['balance_priority']} first"
        )
        width = max((len(slug) for slug in s["task_condition_counts"]), default=4) + 2
        for code, block in s["by_track"].items():
            target = block["target"] if block["target"] is not None else "none"
            self.stdout.write(
                f"\nTrack {code}: target {target}, {block['completed']} completed; spread of "
                f"uses {block['task_use_spread']}, of a task's conditions "
                f"{block['max_task_condition_spread']}, of sequences {block['sequence_spread']}; "
                f"difficulty matched for {block['difficulty_matched']}"
            )
            rows = block["task_condition_counts"]
            letters = list(next(iter(rows.values()), {}))
            periods = len(next(iter(block["position_counts"].values()), {}))
            self.stdout.write(
                f"{'task':<{width}}{'diff':<8}"
                + "".join(f"{c:>4}" for c in letters)
                + "  "
                + "".join(f"P{p:<3}" for p in range(1, periods + 1))
            )
            for slug, by_condition in rows.items():
                positions = "".join(f"{n:<4}" for n in block["position_counts"][slug].values())
                counts = "".join(f"{n:>4}" for n in by_condition.values())
                self.stdout.write(f"{slug:<{width}}{s['difficulty'][slug]:<8}{counts}  {positions}")
        seqs = ", ".join(f"{k} {v}" for k, v in s["sequence_counts"].items())
        self.stdout.write(f"\nsequences: {seqs}")
        verdict = "equal" if s["equal_split"] else f"spread up to {s['max_task_condition_spread']}"
        self.stdout.write(f"AI/no-AI split per task: {verdict}")
        for warning in expected_imbalance(s):
            self.stdout.write(f"warning: {warning}")
