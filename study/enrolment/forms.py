"""Forms of enrolment: the participant's consent decision and the admin's account batch."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from study.enrolment.accounts import DEFAULT_TTL_DAYS, MAX_BATCH
from study.enrolment.consent import (
    Decision,
    check_agreement,
    checkbox_field,
    consent_boxes,
    record_consent,
)
from study.models import ConsentEvent, ConsentForm, Participant


class ConsentDecisionForm(forms.Form):
    """The participant's decision on one consent form.

    Fields: one checkbox per ``form.checkboxes`` entry (``cb_<id>``), ``typed_name`` in
    typed-name mode, and ``decision`` (sent by the Agree/Decline submit buttons). Required ticks
    and the name are only checked for Agree, so Decline always goes through.

    In a view::

        form = ConsentDecisionForm(consent_form, request.POST or None)
        if request.method == "POST" and form.is_valid():
            event = form.record(participant)
            if event is not None:
                ...  # redirect: next step, or the goodbye page after a decline
    """

    decision = forms.ChoiceField(
        choices=Decision.choices,
        widget=forms.HiddenInput,
        error_messages={"required": "Please choose Agree or Decline."},
    )

    def __init__(self, consent_form: ConsentForm, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.consent_form = consent_form
        for box in consent_boxes(consent_form):
            label = box["label"] + (" (required to take part)" if box.get("required") else "")
            self.fields[checkbox_field(box["id"])] = forms.BooleanField(
                label=label,
                required=False,
                widget=forms.CheckboxInput(attrs={"class": "form-check-input"}),
            )
        if consent_form.mode == ConsentForm.Mode.TYPED_NAME:
            self.fields["typed_name"] = forms.CharField(
                label="Type your full name to confirm your consent",
                help_text="Your name is stored separately from your study data, encrypted, "
                "and only as proof of consent.",
                required=False,
                max_length=200,
                widget=forms.TextInput(attrs={"class": "form-control", "autocomplete": "name"}),
            )

    @property
    def checkbox_fields(self) -> list[forms.BoundField]:
        return [self[checkbox_field(box["id"])] for box in consent_boxes(self.consent_form)]

    def checkbox_values(self) -> dict[str, bool]:
        return {
            box["id"]: bool(self.cleaned_data.get(checkbox_field(box["id"])))
            for box in consent_boxes(self.consent_form)
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if cleaned.get("decision") == Decision.AGREE:
            try:
                check_agreement(
                    self.consent_form,
                    self.checkbox_values(),
                    (cleaned.get("typed_name") or "").strip(),
                )
            except ValidationError as exc:
                self.add_error(None, exc)
        return cleaned

    def record(self, participant: Participant) -> ConsentEvent | None:
        """Record the (valid) decision; on a service error, add it to the form, return None."""
        try:
            return record_consent(
                participant,
                self.consent_form,
                decision=self.cleaned_data["decision"],
                checkboxes=self.checkbox_values(),
                typed_name=self.cleaned_data.get("typed_name"),
            )
        except ValidationError as exc:
            self.add_error(None, exc)
            return None


class CreateParticipantsForm(forms.Form):
    n = forms.IntegerField(label="Number of accounts", min_value=1, max_value=MAX_BATCH, initial=10)
    ttl_days = forms.IntegerField(
        label="Login links valid for (days)", min_value=1, max_value=365, initial=DEFAULT_TTL_DAYS
    )
