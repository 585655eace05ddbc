"""Plausible questionnaire answers for demo participants (seeded, valid for every item type)."""

from __future__ import annotations

import random
from typing import Any

from study.models import Item, QuestionnaireVersion

FREE_TEXT = (
    "The legacy module explained the tie-break better than the README did.",
    "I spent most of the time understanding the data format before writing code.",
    "The assistant was quick with boilerplate but I had to check its edge cases.",
    "Having the visible tests helped me notice an off-by-one error early.",
    "I would have liked a bit more time for the performance part.",
)


def answer_for(item: Item, rng: random.Random, *, prefer: dict[str, Any]) -> Any:
    if item.key in prefer:
        return prefer[item.key]
    values = [c["value"] for c in item.choices if isinstance(c, dict) and "value" in c]
    if item.type == Item.Type.SINGLE:
        return rng.choice(values)
    if item.type == Item.Type.MULTIPLE:
        return rng.sample(values, k=min(len(values), rng.randint(1, 2)))
    if item.type == Item.Type.LIKERT5:
        return rng.randint(1, 5)
    if item.type == Item.Type.LIKERT7:
        return rng.randint(1, 7)
    if item.type == Item.Type.NUMBER:
        low = int(item.min_value if item.min_value is not None else 0)
        high = int(item.max_value if item.max_value is not None else low + 20)
        return rng.randint(low, min(high, low + 100))
    return rng.choice(FREE_TEXT)


def answers_for(version: QuestionnaireVersion, rng: random.Random, **prefer: Any) -> dict[str, Any]:
    """A cleaned_data-like dict answering every item (hidden ones are dropped on save)."""
    return {item.key: answer_for(item, rng, prefer=prefer) for item in version.items.all()}
