"""Cohen's kappa for two raters' Pass/Fail judgements, and the Landis & Koch label (the
paper's appendix D.3 reports kappa per quality dimension).

kappa = (p_o - p_e) / (1 - p_e), with p_o the share of items both raters judged alike and p_e
the agreement expected by chance from each rater's own Pass rate. Two edge cases:

- no paired items: there is nothing to agree on, so kappa is ``None`` (shown as "n/a");
- p_e == 1: both raters gave one and the same category to every item (all Pass, or all
  Fail). The formula is 0/0 there; the agreement is complete (p_o == 1), so kappa is 1.0.
  (p_e == 1 happens only then: it needs both raters' Pass rates to be 0 or both to be 1.)
"""

from __future__ import annotations

from collections.abc import Iterable

# Landis & Koch (1977): upper bound of each band -> its label; below 0 is "poor".
LANDIS_KOCH: tuple[tuple[float, str], ...] = (
    (0.20, "slight"),
    (0.40, "fair"),
    (0.60, "moderate"),
    (0.80, "substantial"),
    (1.00, "almost perfect"),
)


def cohen_kappa(pairs: Iterable[tuple[bool, bool]]) -> float | None:
    """Kappa of ``pairs`` (rater 1's judgement, rater 2's judgement) of the same items."""
    items = list(pairs)
    n = len(items)
    if n == 0:
        return None
    agree = sum(1 for a, b in items if a == b) / n
    pass_a = sum(1 for a, _ in items if a) / n
    pass_b = sum(1 for _, b in items if b) / n
    chance = pass_a * pass_b + (1 - pass_a) * (1 - pass_b)
    if chance == 1.0:
        return 1.0
    return (agree - chance) / (1 - chance)


def landis_koch(kappa: float | None) -> str:
    """The strength-of-agreement label of ``kappa`` ("" when there is none)."""
    if kappa is None:
        return ""
    if kappa < 0:
        return "poor"
    for upper, label in LANDIS_KOCH:
        if kappa <= upper:
            return label
    return LANDIS_KOCH[-1][1]
