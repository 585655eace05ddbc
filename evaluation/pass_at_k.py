"""The unbiased pass@k estimator of Chen et al. (2021), "Evaluating Large Language Models
Trained on Code", arXiv:2107.03374.

With n attempts at a task of which c pass, pass@k = 1 - C(n-c, k) / C(n, k): the chance that at
least one of k attempts drawn without replacement passes. Computed as a product to stay exact
for large n.
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def pass_at_k(n: int, c: int, k: int) -> float:
    if not 0 <= c <= n:
        raise ValueError(f"need 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got n={n}, k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def mean_pass_at_k(per_task: Iterable[tuple[int, int]], k: int) -> float:
    """Average pass@k over tasks given as (n, c) pairs; tasks with n < k are an error."""
    values = [pass_at_k(n, c, k) for n, c in per_task]
    if not values:
        raise ValueError("no tasks")
    return sum(values) / len(values)
