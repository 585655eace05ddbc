"""Expert review of task instances (the paper's appendix D): two reviewers judge each instance
Pass/Fail on four quality dimensions; the platform measures how much they agree (Cohen's
kappa) and how many templates passed review on their first version.

- ``record_rating``: one reviewer's four judgements (with comments) of one instance;
- ``agreement``: kappa per criterion and pooled over the criteria, between the two reviewers
  who rated the most instances of the version in common;
- ``first_attempt_acceptance``: the share of reviewed templates whose earliest reviewed version
  both reviewers accepted on every criterion of every instance they rated.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from django.db import transaction

from evaluation.llm.kappa import cohen_kappa, landis_koch
from evaluation.models import ExpertRating
from evaluation.services import record_instance
from evaluation.spec import Instance

Criterion = ExpertRating.Criterion
CRITERIA: tuple[str, ...] = tuple(Criterion.values)
# Appendix D.1: three instances in the initial round, seven more in the extended one.
REVIEW_SEEDS: tuple[int, ...] = tuple(range(1, 11))


class BadRating(ValueError):
    """A rating form that cannot be stored as it is (message for the reviewer)."""


@transaction.atomic
def record_rating(
    instance: Instance, reviewer: Any, judgements: Mapping[str, tuple[bool, str]]
) -> list[ExpertRating]:
    """Store ``reviewer``'s Pass/Fail and comment for every criterion of ``instance``
    (criterion -> (passed, comment)); rating the instance again replaces their earlier
    judgements."""
    unknown = sorted(set(judgements) - set(CRITERIA))
    if unknown:
        raise BadRating(f"Unknown criterion {unknown[0]}; the criteria are {', '.join(CRITERIA)}.")
    missing = [Criterion(c).label for c in CRITERIA if c not in judgements]
    if missing:
        raise BadRating(f"Judge every criterion: {', '.join(missing)} has no Pass or Fail.")
    row = record_instance(instance)
    saved = []
    for criterion in CRITERIA:
        passed, comment = judgements[criterion]
        rating, _ = ExpertRating.objects.update_or_create(
            instance=row,
            reviewer=reviewer,
            criterion=criterion,
            defaults={"passed": passed, "comment": comment.strip()[:5000]},
        )
        saved.append(rating)
    return saved


def ratings_of(slug: str, version: str) -> list[ExpertRating]:
    return list(
        ExpertRating.objects.filter(
            instance__template__slug=slug, instance__template__version=version
        )
        .select_related("instance", "reviewer")
        .order_by("instance__seed", "reviewer_id", "criterion")
    )


@dataclass(frozen=True)
class CriterionAgreement:
    criterion: str
    label: str
    items: int  # instances both reviewers judged on this criterion
    kappa: float | None
    strength: str  # Landis & Koch


@dataclass(frozen=True)
class Agreement:
    """How the pair of reviewers of a template version agree."""

    reviewers: tuple[Any, ...]  # the two users, or fewer when there is no pair yet
    common: int  # instances both rated
    criteria: list[CriterionAgreement] = field(default_factory=list)
    overall: float | None = None  # pooled over every (instance, criterion) both judged
    overall_strength: str = ""
    accepted_by_both: bool = False  # both passed every criterion of every instance they rated


def _by_reviewer(ratings: Iterable[ExpertRating]) -> dict[int, dict[tuple[int, str], bool]]:
    judged: dict[int, dict[tuple[int, str], bool]] = defaultdict(dict)
    for rating in ratings:
        judged[rating.reviewer_id][(rating.instance_id, rating.criterion)] = rating.passed
    return judged


def review_pair(ratings: list[ExpertRating]) -> tuple[int, ...]:
    """The ids of the two reviewers with the most instances rated in common (ties: the lower
    ids), or of the only reviewer."""
    instances: dict[int, set[int]] = defaultdict(set)
    for rating in ratings:
        instances[rating.reviewer_id].add(rating.instance_id)
    if len(instances) < 2:
        return tuple(instances)
    pairs = sorted(
        combinations(sorted(instances), 2),
        key=lambda p: (-len(instances[p[0]] & instances[p[1]]), p),
    )
    return pairs[0]


def agreement(slug: str, version: str) -> Agreement:
    ratings = ratings_of(slug, version)
    pair = review_pair(ratings)
    users = {r.reviewer_id: r.reviewer for r in ratings}
    reviewers = tuple(users[i] for i in pair)
    if len(pair) < 2:
        return Agreement(reviewers=reviewers, common=0)
    judged = _by_reviewer(ratings)
    first, second = judged[pair[0]], judged[pair[1]]
    both = sorted(set(first) & set(second))
    criteria = []
    for criterion in CRITERIA:
        pairs = [(first[key], second[key]) for key in both if key[1] == criterion]
        kappa = cohen_kappa(pairs)
        criteria.append(
            CriterionAgreement(
                criterion, Criterion(criterion).label, len(pairs), kappa, landis_koch(kappa)
            )
        )
    overall = cohen_kappa((first[key], second[key]) for key in both)
    rated = {instance for instance, _ in first} | {instance for instance, _ in second}
    accepted = bool(rated) and all(
        first.get((i, c)) is True and second.get((i, c)) is True for i in rated for c in CRITERIA
    )
    return Agreement(
        reviewers=reviewers,
        common=len({instance for instance, _ in both}),
        criteria=criteria,
        overall=overall,
        overall_strength=landis_koch(overall),
        accepted_by_both=accepted,
    )


@dataclass(frozen=True)
class FirstAttempt:
    reviewed: int  # templates whose earliest reviewed version has two reviewers
    accepted: int
    versions: dict[str, str]  # slug -> its earliest reviewed version

    @property
    def rate(self) -> float | None:
        return self.accepted / self.reviewed if self.reviewed else None


def first_attempt_acceptance() -> FirstAttempt:
    """Over every template: was its earliest reviewed version accepted by both reviewers?"""
    earliest: dict[str, tuple[Any, str]] = {}
    rows = ExpertRating.objects.values_list(
        "instance__template__slug", "instance__template__version", "created_at"
    )
    for slug, version, created in rows:
        if slug not in earliest or created < earliest[slug][0]:
            earliest[slug] = (created, version)
    reviewed = accepted = 0
    for slug, (_, version) in earliest.items():
        result = agreement(slug, version)
        if len(result.reviewers) < 2:
            continue
        reviewed += 1
        accepted += result.accepted_by_both
    return FirstAttempt(
        reviewed=reviewed,
        accepted=accepted,
        versions={slug: version for slug, (_, version) in sorted(earliest.items())},
    )
