"""Counterbalancing design: Williams squares, condition sequences and the candidate plans of a
track. Pure functions, no Django (design notes: ``counterbalancing.md``); the choice among the
candidates is ``minimiser.py``.

A *plan* is a condition sequence (one letter per period, e.g. ``ABBA``) plus one distinct task
per period. Plans are given by online minimisation (Pocock-Simon, biased coin): each candidate
is added hypothetically to the counts and scored by ``sum(weight x (max - min))`` over four
families (sequence, task, task x condition, task x position); with probability ``p_best`` the
plan is drawn among the best-scoring candidates, otherwise among all admissible ones.

*Difficulty.* A study either matches difficulty first (only plans whose conditions have equal
summed difficulty are candidates, when the pool has any; task uses may then be uneven) or
balances uses first: the candidates are the plans within the smallest difficulty gap that can
still balance every task x condition cell (``can_balance``, a linear-programming check; gap 0,
the matched plans alone, whenever matching is free), and among the best-scoring candidates only
those with the smallest gap stay tied.

*Exact fill* (in ``minimiser.py``). When the caller knows how many participants the track should end
with (``target``) and each task x condition cell then has a whole share, only candidates that keep
that end state reachable are admissible: no cell may exceed its share, and in the last ``LOOKAHEAD``
+ 1 assignments the remaining shares must split exactly into the remaining plans (an exhaustive
search). In the last ``FINAL_FILL`` assignments the best admissible plan is taken (ties still drawn
at random). So exact balance does not hinge on the coin. A dropout returns its plan's cells, which
never breaks reachability (that plan refills them).
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy.optimize import linprog

ALGORITHM_VERSION = "minimise-1.1"
SEQUENCES = ("ABBA", "BAAB", "ABAB", "BABA")
DIFFICULTY_LEVELS = {"easy": 1, "medium": 2, "hard": 3}
LOOKAHEAD = 4  # exact search when at most this many plans remain after the current one
FINAL_FILL = 10  # deterministic best (p_best = 1) in the last assignments of an exact fill
MAX_PLANS = 250_000  # refuse designs whose candidate set would be unreasonably large
MAX_SEQUENCES = 5_000


class DesignError(ValueError):
    """The design cannot be built (bad sizes, unknown difficulty, no admissible plan)."""


def williams(n: int) -> list[list[int]]:
    """Bradley's construction of a Williams square: rows are sequences, values are condition
    indices. Balances position and first-order carry-over; odd ``n`` adds the mirror rows."""
    if n < 1:
        raise DesignError("A Williams square needs at least one condition.")
    first: list[int] = []
    lo, hi = 0, n - 1
    for i in range(n):
        if i < 2 or i % 2 == 1:
            first.append(lo)
            lo += 1
        else:
            first.append(hi)
            hi -= 1
    rows = [[(v + r) % n for v in first] for r in range(n)]
    return rows + [row[::-1] for row in rows] if n % 2 else rows


def condition_sequences(
    conditions: Sequence[str],
    sessions: int,
    trials_per_session: int,
    *,
    mirrored: bool = False,
) -> tuple[str, ...]:
    """The condition sequences of a design, one letter per period.

    With ``trials_per_session == len(conditions)`` every session holds each condition once, in
    the order of a Williams row; sessions combine freely, mirrored sessions first (for A/B,
    2 x 2 this is :data:`SEQUENCES`: ABBA, BAAB, ABAB, BABA). Otherwise: every arrangement in
    which each condition occurs equally often overall and as evenly as possible per session.
    ``mirrored`` keeps only the sequences in which each session reverses the one before (for
    A/B, 2 x 2: ABBA and BAAB, the textbook two-sequence crossover).
    """
    result = _all_sequences(conditions, sessions, trials_per_session)
    if mirrored:
        result = tuple(s for s in result if _mirrored(s, trials_per_session))
        if not result:
            raise DesignError("No condition sequence of this session plan mirrors its sessions.")
    return result


def _mirrored(sequence: str, step: int) -> bool:
    parts = [sequence[i : i + step] for i in range(0, len(sequence), step)]
    return all(part == before[::-1] for before, part in itertools.pairwise(parts))


def _all_sequences(
    conditions: Sequence[str], sessions: int, trials_per_session: int
) -> tuple[str, ...]:
    letters = list(conditions)
    if not letters or len(set(letters)) != len(letters) or any(len(c) != 1 for c in letters):
        raise DesignError("Conditions must be distinct single letters.")
    if sessions < 1 or trials_per_session < 1:
        raise DesignError("A design needs at least one session and one trial per session.")
    n = len(letters)
    if trials_per_session == n:
        rows = ["".join(letters[i] for i in row) for row in williams(n)]
        if len(rows) ** sessions > MAX_SEQUENCES:
            raise DesignError("Too many condition sequences; use fewer sessions or conditions.")
        combos = list(itertools.product(rows, repeat=sessions))
        combos.sort(key=lambda c: sum(c[i] != c[i - 1][::-1] for i in range(1, len(c))))
        return tuple("".join(c) for c in combos)
    periods = sessions * trials_per_session
    if periods % n:
        raise DesignError(f"{periods} periods cannot hold each of {n} conditions equally often.")
    per_session = sorted(  # orders of one session whose condition counts differ by <= 1
        "".join(combo)
        for combo in itertools.product(letters, repeat=trials_per_session)
        if max(combo.count(c) for c in letters) - min(combo.count(c) for c in letters) <= 1
    )
    if len(per_session) ** sessions > MAX_PLANS:
        raise DesignError("Too many condition sequences; use fewer sessions or trials.")
    result = tuple(
        seq
        for seq in map("".join, itertools.product(per_session, repeat=sessions))
        if all(seq.count(c) == periods // n for c in letters)
    )
    if not result or len(result) > MAX_SEQUENCES:
        raise DesignError(f"This session plan gives {len(result)} usable condition sequences.")
    return result


@dataclass(frozen=True, order=True)
class TaskInfo:
    slug: str
    track: str
    difficulty: str

    @property
    def level(self) -> int:
        try:
            return DIFFICULTY_LEVELS[self.difficulty]
        except KeyError:
            raise DesignError(
                f"Task {self.slug} has unknown difficulty {self.difficulty!r} "
                f"(expected one of {', '.join(DIFFICULTY_LEVELS)})."
            ) from None


def difficulty_gap(plan: Plan, levels: dict[str, int]) -> int:
    """How far apart the conditions' summed task difficulties are in ``plan`` (0: matched).
    Only meaningful when every condition has the same number of periods."""
    sums: dict[str, int] = defaultdict(int)
    for slug, condition in zip(plan.tasks, plan.sequence, strict=True):
        sums[condition] += levels[slug]
    return max(sums.values()) - min(sums.values()) if sums else 0


def can_balance(plans: Sequence[Plan]) -> bool:
    """Whether some mix of ``plans`` gives every task x condition cell they touch the same
    count: the all-ones vector lies in the cone of the plans' cell vectors (an LP feasibility
    problem; a rational solution scales to whole numbers of participants)."""
    if not plans:
        return False
    cells = sorted({cell for p in plans for cell in zip(p.tasks, p.sequence, strict=True)})
    index = {cell: i for i, cell in enumerate(cells)}
    signatures = sorted(
        {tuple(sorted(index[c] for c in zip(p.tasks, p.sequence, strict=True))) for p in plans}
    )
    matrix = np.zeros((len(cells), len(signatures)))
    for j, sig in enumerate(signatures):
        matrix[list(sig), j] = 1.0
    result = linprog(
        np.zeros(len(signatures)),
        A_eq=matrix,
        b_eq=np.ones(len(cells)),
        bounds=(0, None),
        method="highs",
    )
    return bool(result.status == 0)


@dataclass(frozen=True)
class Constraints:
    """Rules a plan must satisfy. ``difficulty``: "matched" requires equal summed difficulty
    per condition, "if_possible" requires it unless no plan can satisfy it, "off" ignores it."""

    min_tracks: int = 1
    difficulty: Literal["matched", "if_possible", "off"] = "if_possible"
    session_length: int | None = None  # with distinct_tracks_per_session
    distinct_tracks_per_session: bool = False


@dataclass(frozen=True, order=True)
class Plan:
    sequence: str
    tasks: tuple[str, ...]

    def cells(self) -> list[tuple[str, str, int]]:
        """(task, condition, 1-based position) per period."""
        return [
            (t, c, i + 1) for i, (t, c) in enumerate(zip(self.tasks, self.sequence, strict=True))
        ]


def enumerate_plans(
    tasks: Sequence[TaskInfo],
    sequences: Sequence[str],
    periods: int,
    constraints: Constraints | None = None,
) -> list[Plan]:
    """All admissible plans, in a deterministic order (sequences as given, tasks by slug)."""
    constraints = constraints or Constraints()
    pool = sorted(tasks)
    if len({t.slug for t in pool}) != len(pool):
        raise DesignError("Task slugs must be unique within a pool.")
    if len(pool) < periods:
        raise DesignError(f"The pool has {len(pool)} tasks but a plan needs {periods}.")
    if any(len(s) != periods for s in sequences):
        raise DesignError(f"Every condition sequence must have {periods} periods.")
    if math.perm(len(pool), periods) * len(sequences) > MAX_PLANS:
        raise DesignError("Too many candidate plans; use a smaller pool or fewer periods.")
    matched: list[Plan] = []
    unmatched: list[Plan] = []
    step = constraints.session_length or periods
    check_difficulty = constraints.difficulty != "off"
    levels = {t.slug: t.level for t in pool} if check_difficulty else {}
    for seq in sequences:
        letters = sorted(set(seq))
        equal_counts = len({seq.count(c) for c in letters}) == 1
        for perm in itertools.permutations(pool, periods):
            if constraints.min_tracks > 1 and len({t.track for t in perm}) < constraints.min_tracks:
                continue
            if constraints.distinct_tracks_per_session and any(
                len({t.track for t in perm[i : i + step]}) < len(perm[i : i + step])
                for i in range(0, periods, step)
            ):
                continue
            plan = Plan(seq, tuple(t.slug for t in perm))
            if (
                check_difficulty
                and equal_counts
                and len(letters) > 1
                and difficulty_gap(plan, levels)
            ):
                unmatched.append(plan)
                continue
            matched.append(plan)
    if constraints.difficulty == "if_possible" and not matched:
        return unmatched
    return matched
