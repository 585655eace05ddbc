"""k-anonymity of the released quasi-identifiers: generalise as little as needed, then suppress
a group of at least k, and report what was done."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from study.exports import kanon
from study.exports.kanon import ANY, SCREENING_QIS, SUPPRESSED, anonymise

NAMES = [q.name for q in SCREENING_QIS]


def population(n: int, seed: int = 7) -> dict[int, dict[str, str]]:
    rng = random.Random(seed)
    return {i: {q.name: rng.choice(q.values) for q in SCREENING_QIS} for i in range(n)}


def classes(values: dict[int, dict[str, str]]) -> Counter[tuple[str, ...]]:
    return Counter(tuple(v[n] for n in NAMES) for v in values.values())


def test_forty_five_people_reach_k5_with_valid_generalised_values() -> None:
    records = population(45)
    result = anonymise(records, SCREENING_QIS, k=5)
    assert result.satisfied
    assert result.k_achieved == min(classes(result.values).values()) >= 5
    for ladder in SCREENING_QIS:
        allowed = set(ladder.allowed())
        assert {v[ladder.name] for v in result.values.values()} <= allowed
    assert result.steps  # random 45-person data is never 5-anonymous as collected


def test_no_quasi_identifier_is_generalised_further_than_needed() -> None:
    records = population(45, seed=11)
    result = anonymise(records, SCREENING_QIS, k=5)
    budget = int(len(records) * 0.10)
    for ladder in SCREENING_QIS:
        level = result.levels[ladder.name]
        if level == 0:
            continue
        lower = {**result.levels, ladder.name: level - 1}
        sizes = Counter(
            tuple(q.at(lower[q.name], r[q.name]) for q in SCREENING_QIS) for r in records.values()
        )
        small = sum(n for n in sizes.values() if n < 5)
        assert small, f"{ladder.name} could stay at level {level - 1}"
        assert not 5 <= small <= budget, f"{ladder.name} could stay at level {level - 1}"


def test_already_anonymous_data_is_released_as_collected() -> None:
    common = {"age_band": "25_34", "gender_cat": "man", "role_cat": "industry",
              "experience_band": "3_5", "ai_use_cat": "daily"}  # fmt: skip
    records = {i: dict(common) for i in range(6)}
    result = anonymise(records, SCREENING_QIS, k=5)
    assert result.levels == dict.fromkeys(NAMES, 0)
    assert result.values[0] == common
    assert result.k_achieved == 6


def test_a_small_group_of_at_least_k_outliers_is_suppressed_not_generalised() -> None:
    common = {"age_band": "25_34", "gender_cat": "man", "role_cat": "industry",
              "experience_band": "3_5", "ai_use_cat": "daily"}  # fmt: skip
    records = {i: dict(common) for i in range(93)}
    rng = random.Random(3)
    for i in range(93, 100):  # seven people, each unlike anyone else
        records[i] = {q.name: rng.choice(q.values[:-1]) for q in SCREENING_QIS}
        records[i]["age_band"] = "45_plus"
    result = anonymise(records, SCREENING_QIS, k=5)
    assert result.levels == dict.fromkeys(NAMES, 0)
    assert result.suppressed == 7
    assert all(result.values[i] == dict.fromkeys(NAMES, SUPPRESSED) for i in range(93, 100))
    assert result.k_achieved == 7  # the suppressed group counts as one class


def test_fewer_than_k_people_are_fully_generalised_and_reported_unsatisfied() -> None:
    result = anonymise(population(3), SCREENING_QIS, k=5)
    assert result.k_achieved == 3
    assert not result.satisfied
    assert all(v == dict.fromkeys(NAMES, ANY) for v in result.values.values())


def test_no_records_give_an_empty_result() -> None:
    result = anonymise({}, SCREENING_QIS, k=5)
    assert result.values == {}
    assert result.k_achieved == 0


@pytest.mark.parametrize(
    ("name", "level", "raw", "expected"),
    [
        ("age_band", 1, "45_plus", "35_plus"),
        ("age_band", 1, "no_answer", "no_answer"),
        ("gender_cat", 1, "another", "another_or_no_answer"),
        ("role_cat", 2, "student_grad", "student"),
        ("role_cat", 2, "academia", "non_student"),
        ("experience_band", 2, "1_2", "le_5"),
        ("ai_use_cat", 2, "daily", "regularly"),
        ("ai_use_cat", 3, "daily", ANY),
        ("age_band", 1, "", ""),
    ],
)
def test_ladders_merge_categories_level_by_level(
    name: str, level: int, raw: str, expected: str
) -> None:
    ladder = next(q for q in SCREENING_QIS if q.name == name)
    assert ladder.at(level, raw) == expected


def test_describe_reports_levels_steps_and_class_sizes() -> None:
    result = anonymise(population(45), SCREENING_QIS, k=5)
    report = kanon.describe(result, SCREENING_QIS)
    assert report["k_target"] == 5
    assert report["k_achieved"] == result.k_achieved
    assert report["quasi_identifiers"] == NAMES
    assert sum(int(size) * n for size, n in report["equivalence_class_sizes"].items()) == 45
    assert set(report["generalisation"]) == set(NAMES)
