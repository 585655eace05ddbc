"""Install the shipped questionnaires and the default consent form (idempotent).

The content lives in ``study.questionnaires.instruments_data``. Installing never changes what exists: a
questionnaire version already present (published or not) is returned as it is, so a
researcher's edits to a draft survive re-running the installer.
"""

from __future__ import annotations

from string import Template
from typing import Any

from django.db import transaction

from study.models import ConsentForm, Item, Questionnaire, QuestionnaireVersion, Study
from study.questionnaires.instruments_data import (
    CONSENT_BODY,
    CONSENT_CHECKBOXES,
    CONSENT_TITLE,
    CONSENT_VERSION,
    NO_CONTACT,
    QUESTIONNAIRES,
    WITHDRAWAL_DELETE,
    WITHDRAWAL_KEEP,
)


def _item(version: QuestionnaireVersion, order: int, spec: dict[str, Any]) -> Item:
    return Item(
        version=version,
        key=spec["key"],
        order=order,
        type=spec["type"],
        text=spec["text"],
        help_text=spec.get("help_text", ""),
        required=spec.get("required", True),
        choices=spec.get("choices", []),
        min_value=spec.get("min_value"),
        max_value=spec.get("max_value"),
        show_if=spec.get("show_if", {}),
        scale=spec.get("scale", ""),
    )


@transaction.atomic
def install_default_instruments() -> dict[str, QuestionnaireVersion]:
    """Create the ``screening``, ``post-trial`` and ``post-study`` questionnaires (version 1,
    published, with items) unless they exist; return their version 1 by slug."""
    installed: dict[str, QuestionnaireVersion] = {}
    for spec in QUESTIONNAIRES:
        questionnaire, _ = Questionnaire.objects.get_or_create(
            slug=spec["slug"], defaults={"title": spec["title"], "kind": spec["kind"]}
        )
        version, created = QuestionnaireVersion.objects.get_or_create(
            questionnaire=questionnaire,
            version=1,
            defaults={"intro": spec["intro"], "published": True},
        )
        if created:
            Item.objects.bulk_create(
                _item(version, order, item) for order, item in enumerate(spec["items"], start=1)
            )
        installed[spec["slug"]] = version
    return installed


def default_consent_markdown(study: Study) -> str:
    """The default consent text with the study's title, contact and withdrawal policy."""
    keep = study.withdrawal_policy != Study.WithdrawalPolicy.DELETE
    return Template(CONSENT_BODY).safe_substitute(
        study_title=study.title,
        contact=study.contact.strip() or NO_CONTACT,
        withdrawal=WITHDRAWAL_KEEP if keep else WITHDRAWAL_DELETE,
    )


@transaction.atomic
def install_default_consent(study: Study) -> ConsentForm:
    """Create the default consent form (version 1.0, click-to-consent) for ``study`` unless
    that version exists, and make it the study's current form if it has none."""
    form, _ = ConsentForm.objects.get_or_create(
        study=study,
        version=CONSENT_VERSION,
        defaults={
            "title": CONSENT_TITLE,
            "body_markdown": default_consent_markdown(study),
            "checkboxes": [dict(box) for box in CONSENT_CHECKBOXES],
            "mode": ConsentForm.Mode.WAIVER,
        },
    )
    if study.consent_form_id is None:
        study.consent_form = form
        study.save(update_fields=["consent_form"])
    return form


@transaction.atomic
def attach_default_instruments(study: Study) -> None:
    """Install everything and fill the study's empty instrument slots (demo and new studies)."""
    versions = install_default_instruments()
    install_default_consent(study)
    slots = {"screening": "screening", "post_trial": "post-trial", "post_study": "post-study"}
    changed = [field for field in slots if getattr(study, f"{field}_id") is None]
    for field in changed:
        setattr(study, field, versions[slots[field]])
    if changed:
        study.save(update_fields=changed)
