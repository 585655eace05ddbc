"""The unbiased pass@k estimator against known values."""

from __future__ import annotations

import pytest

from evaluation.pass_at_k import mean_pass_at_k, pass_at_k


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (10, 3, 1, 0.3),
        (10, 3, 5, 0.916667),
        (200, 13, 10, 0.497551),
        (5, 0, 1, 0.0),
        (5, 5, 3, 1.0),
    ],
)
def test_known_values(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-6)


def test_pass_at_1_is_the_pass_rate() -> None:
    assert pass_at_k(20, 1, 1) == pytest.approx(0.05)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, -1, 1), (3, 1, 4), (3, 1, 0)])
def test_impossible_inputs_are_refused(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="need"):
        pass_at_k(n, c, k)


def test_mean_over_tasks() -> None:
    assert mean_pass_at_k([(10, 3), (10, 0)], 1) == pytest.approx(0.15)
