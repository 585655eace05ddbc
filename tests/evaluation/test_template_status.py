"""How validations decide a template version's status (the command's tests run real models)."""

from __future__ import annotations

import pytest

from evaluation.llm.validation import decide_status, record_validation, template_status
from evaluation.models import ModelEndpoint, Sweep, TaskTemplate, TemplateValidation

pytestmark = pytest.mark.django_db

Role = TemplateValidation.Role


def _template() -> TaskTemplate:
    return TaskTemplate.objects.create(
        slug="t", version="1.0.0", title="T", track="SDE", difficulty="easy", content_hash="h"
    )


def _validate(template: TaskTemplate, name: str, role: str, passed: int, n: int) -> None:
    endpoint, _ = ModelEndpoint.objects.get_or_create(
        name=name, defaults={"base_url": "http://127.0.0.1:9/v1", "model": name}
    )
    sweep = Sweep.objects.create(
        key=f"{name}-{role}-{passed}-{n}-{Sweep.objects.count()}",
        endpoint=endpoint,
        endpoint_settings={},
        condition="C0",
        purpose="validation",
        templates={template.slug: template.version},
        samples=1,
        attempts=1,
    )
    record_validation(
        template=template,
        endpoint=endpoint,
        endpoint_settings={"name": name},
        role=role,
        sweep=sweep,
        instances=n,
        passed=passed,
    )


def test_one_of_twenty_and_one_of_ten_are_accepted_after_every_model_ran() -> None:
    template = _template()
    assert template_status("t", "1.0.0") == "unvalidated"
    _validate(template, "base", Role.BASELINE, 1, 20)
    status = decide_status("t", "1.0.0", models=["gpt", "gemini"])
    assert status.status == "unvalidated"
    assert "gpt, gemini" in status.reason or "gemini, gpt" in status.reason
    _validate(template, "gpt", Role.GENERALISATION, 1, 10)
    assert decide_status("t", "1.0.0", models=["gpt", "gemini"]).status == "unvalidated"
    _validate(template, "gemini", Role.GENERALISATION, 0, 10)
    status = decide_status("t", "1.0.0", models=["gpt", "gemini"])
    assert status.status == "accepted"
    assert status.decided_by is not None
    assert status.decided_by.endpoint.name == "gemini"
    assert template_status("t", "1.0.0") == "accepted"
    # A later model within its threshold, or deciding again, keeps it accepted.
    _validate(template, "newer", Role.GENERALISATION, 1, 10)
    assert decide_status("t", "1.0.0").status == "accepted"
    _validate(template, "newest", Role.GENERALISATION, 2, 10)
    status = decide_status("t", "1.0.0")
    assert status.status == "compromised"
    assert "newest passed 2/10" in status.reason
    _validate(template, "base", Role.BASELINE, 0, 20)
    assert decide_status("t", "1.0.0").status == "compromised"  # final for this version


def test_two_of_twenty_on_the_baseline_rejects() -> None:
    template = _template()
    _validate(template, "base", Role.BASELINE, 2, 20)
    status = decide_status("t", "1.0.0", models=["gpt"])
    assert status.status == "rejected"
    assert status.reason == "Too easy: baseline base passed 2/20 (0.10, threshold 0.05)."
    assert template_status("t", "2.0.0") == "unvalidated"  # another version is its own


def test_an_endpoint_pointed_at_a_newer_model_counts_as_a_new_model() -> None:
    template = _template()
    _validate(template, "base", Role.BASELINE, 0, 20)
    _validate(template, "other", Role.GENERALISATION, 0, 10)
    assert decide_status("t", "1.0.0").status == "accepted"
    other = ModelEndpoint.objects.get(name="other")
    sweep = Sweep.objects.create(
        key="other-repointed",
        endpoint=other,
        endpoint_settings={"name": "other", "base_url": other.base_url, "model": "other-v2"},
        condition="C0",
        purpose="validation",
        templates={"t": "1.0.0"},
        samples=1,
        attempts=1,
    )
    for role in (Role.GENERALISATION, Role.BASELINE):  # one sweep may serve both roles
        record_validation(
            template=template,
            endpoint=other,
            endpoint_settings=sweep.endpoint_settings,
            role=role,
            sweep=sweep,
            instances=10,
            passed=2,
        )
    assert TemplateValidation.objects.filter(sweep=sweep).count() == 2
    assert decide_status("t", "1.0.0").status == "compromised"
