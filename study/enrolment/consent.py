"""Consent: render a form version, record decisions on it, and know when to ask again.

Consent forms are immutable (``ConsentForm.save`` refuses a changed text); a new text is a new
version. Each decision is an append-only ``ConsentEvent`` holding the form's hash, the exact
HTML shown and its hash, the ticked checkboxes and the time.

Typed-name mode: the name a participant types is never written to research tables. It goes to
the encrypted vault (``study.vault.services.add_typed_consent_name``) inside the consent
transaction: if the vault refuses it, no event is recorded either. The event records only that
a name was given.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from study.markdown import render_markdown
from study.models import ConsentEvent, ConsentForm, Participant
from study.vault.services import add_typed_consent_name

Decision = ConsentEvent.Decision
_CHECKBOX_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,59}$")
REQUIRED_CHECKBOX_MESSAGE = (
    "Please tick this box to take part. If you do not agree, choose Decline."
)
TYPED_NAME_MESSAGE = "Please type your name to confirm your consent, or choose Decline."


def checkbox_field(checkbox_id: str) -> str:
    """The form field name (and ``ValidationError`` key) of a consent checkbox."""
    return f"cb_{checkbox_id}"


def validate_checkboxes(value: Any) -> None:
    """Check the ``ConsentForm.checkboxes`` JSON: ``[{"id", "label", "required"}, ...]``."""
    if not isinstance(value, list):
        raise ValidationError("Checkboxes must be a list of objects.")
    seen: set[str] = set()
    for position, box in enumerate(value, start=1):
        where = f"Checkbox {position}"
        if not isinstance(box, dict):
            raise ValidationError(f'{where}: use {{"id": ..., "label": ..., "required": ...}}.')
        unknown = set(box) - {"id", "label", "required"}
        if unknown:
            raise ValidationError(f"{where}: unknown keys {sorted(unknown)}.")
        box_id = box.get("id")
        if not isinstance(box_id, str) or not _CHECKBOX_ID.match(box_id):
            raise ValidationError(
                f"{where}: id must be lower-case letters, digits, '-' or '_' (max 60)."
            )
        if box_id in seen:
            raise ValidationError(f"{where}: the id {box_id!r} is used twice.")
        seen.add(box_id)
        if not isinstance(box.get("label"), str) or not box["label"].strip():
            raise ValidationError(f"{where}: the label must be non-empty text.")
        if not isinstance(box.get("required", False), bool):
            raise ValidationError(f"{where}: required must be true or false.")


def consent_boxes(form: ConsentForm) -> list[dict[str, Any]]:
    return [dict(box) for box in form.checkboxes or []]


def render_consent(form: ConsentForm) -> SafeString:
    """The consent text exactly as shown to participants (deterministic for a form version)."""
    meta = format_html(
        '<p class="consent-meta small text-body-secondary">Consent form version {}{}</p>',
        form.version,
        format_html(" · Ethics approval {}", form.irb_reference) if form.irb_reference else "",
    )
    body = render_markdown(form.body_markdown)
    return mark_safe(  # noqa: S308 - both parts are escaped/sanitised above
        f'<div class="consent-text" data-consent-version="{_attr(form.version)}">\n'
        f"{body}{meta}\n</div>\n"
    )


def _attr(value: str) -> str:
    return str(format_html("{}", value))


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def needs_consent(participant: Participant) -> bool:
    """Whether the participant must (re-)consent before going on.

    True for an active participant when the study has a current consent form and the
    participant's latest AGREE event is on a different form (or there is none). Participants
    whose participation has ended (complete, declined, withdrawn, excluded) are never asked.
    """
    current_id = participant.study.consent_form_id
    if current_id is None or not participant.is_active:
        return False
    latest = (
        ConsentEvent.objects.filter(participant=participant, decision=Decision.AGREE)
        .order_by("-decided_at", "-pk")
        .values_list("form_id", flat=True)
        .first()
    )
    return latest != current_id


@transaction.atomic
def record_consent(
    participant: Participant,
    form: ConsentForm,
    *,
    decision: str,
    checkboxes: Mapping[str, bool],
    typed_name: str | None = None,
) -> ConsentEvent:
    """Record one consent decision and return its event.

    ``decision`` is ``"agree"`` or ``"decline"``; ``checkboxes`` maps checkbox ids to ticked
    (unknown ids are ignored, missing ones count as not ticked). On AGREE, every required
    checkbox must be ticked and, in typed-name mode, a name typed; otherwise a
    ``ValidationError`` keyed by form field name (``checkbox_field(id)`` / ``"typed_name"``)
    is raised, ready for ``form.add_error(None, exc)``.

    Only the event is written: stage changes (consented, declined, withdrawn) belong to the
    caller (``study.enrolment.services.give_consent``). A participant whose participation has ended
    cannot record a new decision. Re-submitting the same decision with the same ticks on the
    same form returns the existing event (double-click safe).
    """
    if decision not in Decision.values:
        raise ValidationError(f"Unknown consent decision {decision!r}.")
    if form.study_id != participant.study_id:
        raise ValidationError("This consent form belongs to another study.")
    if form.content_sha256 != form.compute_hash():
        raise ValidationError("This consent form was altered after it was saved; do not use it.")
    # Serialise decisions of one participant so double submissions cannot both insert.
    locked = Participant.objects.select_for_update().get(pk=participant.pk)
    ticks = {box["id"]: bool(checkboxes.get(box["id"], False)) for box in consent_boxes(form)}
    latest = ConsentEvent.objects.filter(participant=locked).order_by("-decided_at", "-pk").first()
    if (
        latest is not None
        and latest.form_id == form.pk
        and latest.decision == decision
        and latest.checkboxes == ticks
    ):
        return latest
    if not locked.is_active:
        raise ValidationError("Your participation in this study has already ended.")
    name = (typed_name or "").strip()
    if decision == Decision.AGREE:
        check_agreement(form, ticks, name)
    give_name = decision == Decision.AGREE and form.mode == ConsentForm.Mode.TYPED_NAME
    if give_name:
        add_typed_consent_name(locked.internal_id, name)
    html = str(render_consent(form))
    now = timezone.now()
    event = ConsentEvent.objects.create(
        participant=locked,
        form=form,
        form_sha256=form.content_sha256,
        decision=decision,
        checkboxes=ticks,
        typed_name_given=give_name,
        rendered_html=html,
        rendered_sha256=_sha256(html),
        decided_at=now,
    )
    return event


def check_agreement(form: ConsentForm, ticks: dict[str, bool], name: str) -> None:
    errors: dict[str, list[str]] = {}
    for box in consent_boxes(form):
        if box.get("required") and not ticks[box["id"]]:
            errors[checkbox_field(box["id"])] = [REQUIRED_CHECKBOX_MESSAGE]
    if form.mode == ConsentForm.Mode.TYPED_NAME and len(re.sub(r"\W", "", name)) < 2:
        errors["typed_name"] = [TYPED_NAME_MESSAGE]
    if errors:
        raise ValidationError(errors)


def next_version_label(form: ConsentForm) -> str:
    """A free version label after ``form.version``: 1.0 -> 1.1, 3 -> 4, draft -> draft.1."""
    taken = set(
        ConsentForm.objects.filter(study_id=form.study_id).values_list("version", flat=True)
    )
    label = form.version
    for _ in range(1000):
        if match := re.fullmatch(r"(.*?)(\d+)", label):
            label = f"{match.group(1)}{int(match.group(2)) + 1}"
        else:
            label = f"{label}.1"
        if label not in taken:
            return label
    raise ValidationError("Could not find a free version label; enter one by hand.")
