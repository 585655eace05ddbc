"""Checks of the questionnaire builder: what keeps an item or a version from being published.

Each problem is a sentence a researcher can act on; the admin shows them next to the field.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from study.models import Item, QuestionnaireVersion, Response
from study.questionnaires.forms import CHOICE_TYPES, LIKERT_POINTS, T


def item_problems(item: Item) -> dict[str, list[str]]:
    """Configuration problems of one item, keyed by field name (empty when fine)."""
    problems: dict[str, list[str]] = defaultdict(list)
    choices = item.choices if item.choices is not None else []
    if not isinstance(choices, list):
        problems["choices"].append("Use a JSON list.")
    elif item.type in CHOICE_TYPES:
        values = [c.get("value") if isinstance(c, dict) else None for c in choices]
        if not choices:
            problems["choices"].append('List the options: [{"value": "a", "label": "A"}, ...].')
        elif any(not isinstance(v, str) or not v for v in values):
            problems["choices"].append('Every option needs a non-empty text "value".')
        elif len(set(values)) != len(values):
            problems["choices"].append("Option values must be unique.")
    elif item.type in LIKERT_POINTS:
        first = choices[0] if choices else {}
        if len(choices) > 1 or not isinstance(first, dict) or set(first) - {"low", "mid", "high"}:
            problems["choices"].append(
                'Likert items take [] or one element: [{"low": "...", "high": "..."}].'
            )
    elif choices:
        problems["choices"].append("Only choice and Likert items have choices; leave it [].")
    low, high = item.min_value, item.max_value
    if item.type != T.NUMBER and (low is not None or high is not None):
        problems["min_value"].append("Only number items take a minimum or maximum.")
    elif low is not None and high is not None and low > high:
        problems["max_value"].append("The maximum must not be below the minimum.")
    condition = item.show_if or {}
    if condition and (
        not isinstance(condition, dict)
        or set(condition) != {"item", "in"}
        or not isinstance(condition["in"], list)
        or not condition["in"]
    ):
        problems["show_if"].append('Use {"item": "<key>", "in": ["value", ...]}, or {}.')
    elif condition and condition["item"] == item.key:
        problems["show_if"].append("An item cannot depend on itself.")
    return dict(problems)


def order_problems(items: Iterable[Item]) -> list[str]:
    problems, earlier = [], set()
    for item in items:
        condition = item.show_if if isinstance(item.show_if, dict) else {}
        controller = condition.get("item")
        if controller and controller not in earlier:
            problems.append(f"{item.key}: show_if must name an earlier item, not {controller!r}.")
        earlier.add(item.key)
    return problems


def version_problems(version: QuestionnaireVersion) -> list[str]:
    """Why ``version`` cannot be published (empty when it can)."""
    items = list(version.items.order_by("order", "pk"))
    problems = [] if items else ["A questionnaire version needs at least one item."]
    for item in items:
        for field, found in item_problems(item).items():
            problems.extend(f"{item.key} ({field}): {message}" for message in found)
    return problems + order_problems(items)


def is_frozen(version: QuestionnaireVersion | None) -> bool:
    """Published or already answered: items must not change any more."""
    if version is None or version.pk is None:
        return False
    return version.published or Response.objects.filter(version=version).exists()
