"""Questionnaires: forms built from a version's items, conditional display, answers and scores.

Item types map to form fields (field name = ``Item.key``): single choice -> radio buttons,
multiple choice -> checkboxes, Likert 5/7 -> radio buttons 1..n with end anchors (stored as an
int), number -> a number with the item's min/max (stored as int when whole), short/long text.

Conditional display: ``Item.show_if = {"item": "<key>", "in": ["value", ...]}`` shows an item
only while the controlling item (itself visible) has one of those values (for multiple choice:
any of them ticked). The server evaluates it on the submitted data: hidden items are never
required, never validated, and their answers are dropped. ``static/js/questionnaire.js`` does
the same in the browser through ``data-show-if`` attributes.

Storing answers is ``services.save_response``; scale scores and the track decision are in
``scoring``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property
from typing import Any

from django import forms
from django.utils.safestring import SafeString

from study.markdown import render_markdown
from study.models import (
    Item,
    QuestionnaireVersion,
)

T = Item.Type
LIKERT_POINTS = {T.LIKERT5: 5, T.LIKERT7: 7}
CHOICE_TYPES = {T.SINGLE, T.MULTIPLE}
GROUP_TYPES = {T.SINGLE, T.MULTIPLE, T.LIKERT5, T.LIKERT7}
DEFAULT_ANCHORS = {"low": "Strongly disagree", "high": "Strongly agree"}
SHORT_TEXT_MAX, LONG_TEXT_MAX = 300, 5000
REQUIRED_MESSAGE = "Please answer this question."
CHOICE_MESSAGE = "Please choose one of the options shown."


# --- Values and visibility ----------------------------------------------------------------
def is_empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == ()


def _num(value: float) -> int | float:
    return int(value) if float(value).is_integer() else float(value)


def json_value(value: Any) -> Any:
    """A cleaned form value as stored in ``Answer.value`` (JSON; whole numbers as int)."""
    if isinstance(value, Decimal | float) and not isinstance(value, bool):
        return _num(float(value))
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return value


def _as_strings(value: Any) -> set[str]:
    if is_empty(value):
        return set()
    values = value if isinstance(value, list | tuple | set) else [value]
    return {str(_num(v)) if isinstance(v, float) else str(v) for v in values}


def visible_keys(items: Sequence[Item], values: Mapping[str, Any]) -> set[str]:
    """Keys of the items shown for these answers (hidden controllers hide their dependants)."""
    by_key = {item.key: item for item in items}
    memo: dict[str, bool] = {}

    def shown(key: str, path: frozenset[str]) -> bool:
        if key not in memo:
            condition = by_key[key].show_if or {}
            controller = condition.get("item")
            if not condition:
                memo[key] = True
            elif controller not in by_key or controller in path:  # dangling or cyclic
                memo[key] = False
            else:
                allowed = {str(v) for v in condition.get("in", [])}
                memo[key] = shown(controller, path | {key}) and bool(
                    _as_strings(values.get(controller)) & allowed
                )
        return memo[key]

    return {item.key for item in items if shown(item.key, frozenset())}


# --- Form ---------------------------------------------------------------------------------
def likert_anchors(item: Item) -> dict[str, str]:
    first = item.choices[0] if item.choices else {}
    anchors = dict(DEFAULT_ANCHORS)
    if isinstance(first, dict):
        anchors.update({k: str(v) for k, v in first.items() if k in ("low", "mid", "high")})
    return anchors


def item_choices(item: Item) -> list[tuple[str, str]]:
    if item.type in LIKERT_POINTS:
        points = LIKERT_POINTS[T(item.type)]
        anchors = likert_anchors(item)
        labels = {1: anchors["low"], points: anchors["high"]}
        if "mid" in anchors:
            labels[(points + 1) // 2] = anchors["mid"]
        return [
            (str(n), f"{n} = {labels[n]}" if n in labels else str(n)) for n in range(1, points + 1)
        ]
    return [(str(c["value"]), str(c.get("label", c["value"]))) for c in item.choices or []]


def _fmt(value: float) -> str:
    return str(_num(value))


def _field_for(item: Item) -> forms.Field:
    common: dict[str, Any] = {"label": item.text, "help_text": item.help_text, "required": False}
    choice_errors = {"invalid_choice": CHOICE_MESSAGE, "invalid_list": CHOICE_MESSAGE}
    check = {"class": "form-check-input"}
    if item.type == T.SINGLE:
        return forms.ChoiceField(
            choices=item_choices(item),
            widget=forms.RadioSelect(attrs=check),
            error_messages=choice_errors,
            **common,
        )
    if item.type == T.MULTIPLE:
        return forms.MultipleChoiceField(
            choices=item_choices(item),
            widget=forms.CheckboxSelectMultiple(attrs=check),
            error_messages=choice_errors,
            **common,
        )
    if item.type in LIKERT_POINTS:
        return forms.TypedChoiceField(
            choices=item_choices(item),
            coerce=int,
            empty_value=None,
            widget=forms.RadioSelect(attrs=check),
            error_messages=choice_errors,
            **common,
        )
    if item.type == T.NUMBER:
        low, high = item.min_value, item.max_value
        errors = {"invalid": "Please enter a number, for example 3 or 2.5."}
        if low is not None:
            errors["min_value"] = f"Please enter a number of at least {_fmt(low)}."
        if high is not None:
            errors["max_value"] = f"Please enter a number no greater than {_fmt(high)}."
        attrs = {"class": "form-control", "inputmode": "decimal"}
        return forms.FloatField(
            min_value=low,
            max_value=high,
            widget=forms.NumberInput(attrs=attrs),
            error_messages=errors,
            **common,
        )
    if item.type == T.SHORT_TEXT:
        widget: forms.Widget = forms.TextInput(attrs={"class": "form-control"})
        limit = SHORT_TEXT_MAX
    else:
        widget = forms.Textarea(attrs={"class": "form-control", "rows": 4})
        limit = LONG_TEXT_MAX
    return forms.CharField(
        max_length=limit,
        widget=widget,
        error_messages={"max_length": f"Please keep this answer under {limit} characters."},
        **common,
    )


@dataclass
class ItemRow:
    """One item as the template renders it: a fieldset (choices, Likert) or a labelled input."""

    item: Item
    field: forms.BoundField
    number: int
    is_group: bool
    is_likert: bool
    show_if_json: str
    anchor: str
    hint: str
    describedby: str

    @property
    def key(self) -> str:
        return self.item.key

    @property
    def required(self) -> bool:
        return self.item.required

    @property
    def help_id(self) -> str:
        return f"q-{self.item.key}-help"

    @property
    def error_id(self) -> str:
        return f"q-{self.item.key}-error"


def range_hint(item: Item) -> str:
    low, high = item.min_value, item.max_value
    if item.type != T.NUMBER:
        return ""
    if low is not None and high is not None:
        return f"A number from {_fmt(low)} to {_fmt(high)}."
    if low is not None:
        return f"A number of at least {_fmt(low)}."
    if high is not None:
        return f"A number no greater than {_fmt(high)}."
    return ""


class QuestionnaireForm(forms.Form):
    """A form with one field per item of ``version`` (see the module docstring)."""

    def __init__(self, version: QuestionnaireVersion, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("label_suffix", "")
        super().__init__(*args, **kwargs)
        self.version = version
        self.items: list[Item] = list(version.items.order_by("order", "pk"))
        for item in self.items:
            self.fields[item.key] = _field_for(item)

    @property
    def intro_html(self) -> SafeString:
        return render_markdown(self.version.intro)

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        shown = visible_keys(self.items, cleaned)
        for item in self.items:
            if item.key not in shown:
                cleaned.pop(item.key, None)
                self.errors.pop(item.key, None)  # hidden items are never validated
            elif item.required and is_empty(cleaned.get(item.key)) and item.key not in self.errors:
                self.add_error(item.key, REQUIRED_MESSAGE)
        return cleaned

    @cached_property
    def rows(self) -> list[ItemRow]:
        """Items with their bound fields, marked up with the current errors (for templates)."""
        errors = self.errors if self.is_bound else {}
        rows = []
        for number, item in enumerate(self.items, start=1):
            is_group = item.type in GROUP_TYPES
            bound = self[item.key]
            hint = item.help_text or range_hint(item)
            described = [f"q-{item.key}-help"] if hint else []
            described += [f"q-{item.key}-error"] if item.key in errors else []
            if not is_group:
                attrs = bound.field.widget.attrs
                if described:
                    attrs["aria-describedby"] = " ".join(described)
                if item.required and not item.show_if:
                    attrs["aria-required"] = "true"
                if item.key in errors:
                    attrs["aria-invalid"] = "true"
                    attrs["class"] = attrs.get("class", "") + " is-invalid"
            rows.append(
                ItemRow(
                    item=item,
                    field=bound,
                    number=number,
                    is_group=is_group,
                    is_likert=item.type in LIKERT_POINTS,
                    show_if_json=json.dumps(item.show_if) if item.show_if else "",
                    anchor=f"id_{item.key}_0" if is_group else f"id_{item.key}",
                    hint=hint,
                    describedby=" ".join(described),
                )
            )
        return rows

    @property
    def error_rows(self) -> list[ItemRow]:
        return [row for row in self.rows if row.key in self.errors]


def build_form(
    version: QuestionnaireVersion, data: Mapping[str, Any] | None = None, **kwargs: Any
) -> QuestionnaireForm:
    """The participant form for ``version``; bound when ``data`` (``request.POST``) is given."""
    return QuestionnaireForm(version, data, **kwargs)
