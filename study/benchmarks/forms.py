"""The "start a sweep" form: the same choices and refusals as ``benchmark_llm``."""

from __future__ import annotations

from typing import Any

from django import forms

from evaluation.bank import list_templates
from evaluation.llm.sweeps import SweepInputError, check_key, sweep_instances
from evaluation.models import Dataset, ModelEndpoint, Sweep

MAX_SAMPLES = 100
MAX_ATTEMPTS = 100


def _dataset_choices() -> list[tuple[str, str]]:
    return [("", "— none: seeds 1..N below —")] + [
        (d.version, f"{d.version[:12]} ({len(d.instances)} instances, {d.per_template} per "
         f"template)")
        for d in Dataset.objects.all()[:50]
    ]  # fmt: skip


def template_choices() -> list[tuple[str, str]]:
    """The active templates, then the retired ones (re-running one reproduces old results)."""
    specs = sorted(list_templates(retired=True), key=lambda t: (bool(t.retired), t.slug))
    return [(t.slug, f"{t.slug} (retired)" if t.retired else t.slug) for t in specs]


class SweepForm(forms.Form):
    endpoint = forms.ModelChoiceField(
        queryset=ModelEndpoint.objects.all(), to_field_name="name", empty_label=None
    )
    condition = forms.ChoiceField(choices=Sweep.Condition.choices)
    templates = forms.MultipleChoiceField(
        required=False,
        help_text="None ticked: every template of the dataset (or the bank's active ones).",
    )
    dataset = forms.ChoiceField(required=False)
    instances = forms.IntegerField(
        required=False, min_value=1, max_value=1000, help_text="Seeds 1..N of every template."
    )
    samples = forms.IntegerField(min_value=1, max_value=MAX_SAMPLES, initial=10)
    attempts = forms.IntegerField(
        min_value=1, max_value=MAX_ATTEMPTS, initial=25, help_text="Visible-test runs per run."
    )
    budget_tokens = forms.IntegerField(
        required=False, min_value=1, label="Token budget", help_text="Tokens per run (empty: none)."
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["templates"].choices = template_choices()  # type: ignore[attr-defined]
        self.fields["dataset"].choices = _dataset_choices()  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if self.errors:
            return data
        if data.get("dataset") and data.get("instances") is not None:
            raise forms.ValidationError("Give either a dataset or a number of instances, not both.")
        if not data.get("dataset") and data.get("instances") is None:
            raise forms.ValidationError("Choose a dataset, or give a number of instances.")
        try:
            check_key(data["endpoint"])
            data["dataset_row"], data["pairs"] = sweep_instances(
                dataset=data.get("dataset") or "",
                instances=data.get("instances"),
                templates=sorted(data.get("templates") or []),
            )
        except SweepInputError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return data
