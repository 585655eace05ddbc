"""Install the shipped questionnaires and the default consent form (idempotent).

The content is data in ``study/questionnaires/instruments/`` (TOML and Markdown; its README
says what each file holds). Installing never changes what exists: a questionnaire version
already present (published or not) is returned as it is, so a researcher's edits to a draft
survive re-running the installer.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path
from string import Template
from typing import Any

from django.db import transaction

from study.models import ConsentForm, Item, Questionnaire, QuestionnaireVersion, Study

DATA = Path(__file__).with_name("instruments")
QUESTIONNAIRE_SLUGS = ("screening", "post-trial", "post-study")


@cache
def questionnaire_specs() -> tuple[dict[str, Any], ...]:
    """The shipped questionnaires, as read from their TOML files."""
    return tuple(
        tomllib.loads((DATA / f"{slug}.toml").read_text(encoding="utf-8"))
        for slug in QUESTIONNAIRE_SLUGS
    )


@cache
def consent_spec() -> dict[str, Any]:
    spec = tomllib.loads((DATA / "consent.toml").read_text(encoding="utf-8"))
    spec["body"] = (DATA / "consent.md").read_text(encoding="utf-8")
    return spec


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
    for spec in questionnaire_specs():
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
    spec = consent_spec()
    keep = study.withdrawal_policy != Study.WithdrawalPolicy.DELETE
    return Template(spec["body"]).safe_substitute(
        study_title=study.title,
        contact=study.contact.strip() or spec["no_contact"],
        withdrawal=spec["withdrawal_keep"] if keep else spec["withdrawal_delete"],
    )


@transaction.atomic
def install_default_consent(study: Study) -> ConsentForm:
    """Create the default consent form (click-to-consent) for ``study`` unless that version
    exists, and make it the study's current form if it has none."""
    spec = consent_spec()
    form, _ = ConsentForm.objects.get_or_create(
        study=study,
        version=spec["version"],
        defaults={
            "title": spec["title"],
            "body_markdown": default_consent_markdown(study),
            "checkboxes": [dict(box) for box in spec["checkboxes"]],
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
