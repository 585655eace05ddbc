"""Cohen's kappa and its Landis & Koch label, against values worked out by hand."""

from __future__ import annotations

import pytest

from evaluation.llm.kappa import cohen_kappa, landis_koch

T, F = True, False


def test_kappa_of_a_mixed_table() -> None:
    # 6 both Pass, 2 both Fail, 2 disagreements: p_o = 0.8; each rater passes 7 of 10, so
    # p_e = 0.7 * 0.7 + 0.3 * 0.3 = 0.58 and kappa = 0.22 / 0.42.
    pairs = [(T, T)] * 6 + [(T, F), (F, T)] + [(F, F)] * 2
    kappa = cohen_kappa(pairs)
    assert kappa == pytest.approx(0.22 / 0.42)
    assert landis_koch(kappa) == "moderate"


def test_kappa_of_full_and_opposite_agreement() -> None:
    assert cohen_kappa([(T, T), (F, F), (T, T)]) == pytest.approx(1.0)
    opposite = [(T, F)] * 5 + [(F, T)] * 5  # p_o = 0, p_e = 0.5
    assert cohen_kappa(opposite) == pytest.approx(-1.0)
    assert landis_koch(-1.0) == "poor"


def test_one_rater_always_passing_gives_no_agreement_beyond_chance() -> None:
    # p_o = 0.75; rater 1 passes all, rater 2 passes 3 of 4: p_e = 0.75, kappa = 0.
    assert cohen_kappa([(T, T)] * 3 + [(T, F)]) == pytest.approx(0.0)


def test_degenerate_and_empty_tables() -> None:
    # Both raters give one identical category to every item: p_e = 1, kappa is defined as 1.
    assert cohen_kappa([(T, T)] * 4) == 1.0
    assert cohen_kappa([(F, F)] * 2) == 1.0
    assert cohen_kappa([]) is None
    assert landis_koch(None) == ""


@pytest.mark.parametrize(
    ("kappa", "label"),
    [
        (0.0, "slight"),
        (0.2, "slight"),
        (0.21, "fair"),
        (0.6, "moderate"),
        (0.8, "substantial"),
        (0.81, "almost perfect"),
        (1.0, "almost perfect"),
    ],
)
def test_landis_koch_bands(kappa: float, label: str) -> None:
    assert landis_koch(kappa) == label
