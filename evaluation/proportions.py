"""Intervals for pass rates: one definition for the study's Table 2 and the LLM arm."""

from __future__ import annotations

from statsmodels.stats.proportion import proportion_confint


def wilson(passed: int, n: int) -> tuple[float | None, float | None]:
    """The 95 % Wilson score interval of ``passed`` out of ``n`` (None, None without data)."""
    if n == 0:
        return None, None
    low, high = proportion_confint(passed, n, alpha=0.05, method="wilson")
    return float(low), float(high)
