"""Studies recruit with validated templates only, unless they allow unvalidated ones (pilots);
rejected and compromised templates never."""

from __future__ import annotations

import pytest
from django.test import Client

from evaluation.bank import load_template
from evaluation.models import TemplateStatus
from study.audit.log import CONFIG_CHANGE
from study.configuration.admin import PoolEntryForm
from study.configuration.services import CannotOpen, open_recruitment
from study.configuration.validation import configuration_problems
from study.models import AuditEvent, Study, TaskPoolEntry
from tests.study.helpers import JOURNEY_TEMPLATES, journey_study

pytestmark = pytest.mark.django_db

CHEAP = "sde-binary-palindromes"


def _set(slug: str, status: str) -> str:
    version = load_template(slug).version
    TemplateStatus.objects.update_or_create(slug=slug, version=version, defaults={"status": status})
    return version


def test_recruitment_needs_accepted_templates_by_default() -> None:
    study = journey_study(status=Study.Status.DRAFT, allow_unvalidated_templates=False)
    version = load_template(CHEAP).version
    problems = configuration_problems(study)
    assert (
        f"Template {CHEAP} {version} has not been validated: run manage.py validate_templates "
        f"--baseline ENDPOINT --models E1,E2 --templates {CHEAP}, or allow unvalidated templates "
        "(pilots only)." in problems
    )
    with pytest.raises(CannotOpen, match="has not been validated"):
        open_recruitment(study, actor=None)
    for slug, _ in JOURNEY_TEMPLATES:
        _set(slug, TemplateStatus.Status.ACCEPTED)
    # The journey's templates are the first bank's, retired since: accepted or not, a study
    # that is not a pilot may not recruit with them.
    assert configuration_problems(study) == [
        f"Template {slug} was retired from the bank on 2026-12-02: take it out of the pool."
        for slug in sorted(slug for slug, _ in JOURNEY_TEMPLATES)
    ]
    study.allow_unvalidated_templates = True
    study.save(update_fields=["allow_unvalidated_templates"])
    assert configuration_problems(study) == []  # a pilot may replay them
    study.allow_unvalidated_templates = False
    study.save(update_fields=["allow_unvalidated_templates"])
    # Validation is of the current version: an accepted older version does not count.
    TemplateStatus.objects.filter(slug=CHEAP).update(version="0.0.1")
    assert any(
        f"{CHEAP} {version} has not been validated" in p for p in configuration_problems(study)
    )
    # An inactive entry is not checked.
    study.pool.filter(template_slug=CHEAP).update(active=False)
    assert not any(CHEAP in p for p in configuration_problems(study))
    assert sum(" was retired from the bank " in p for p in configuration_problems(study)) == 3


@pytest.mark.parametrize("status", ["rejected", "compromised"])
def test_rejected_and_compromised_templates_are_refused_even_in_a_pilot(status: str) -> None:
    study = journey_study(status=Study.Status.DRAFT)
    assert study.allow_unvalidated_templates  # test studies are pilots
    assert configuration_problems(study) == []
    version = _set(CHEAP, status)
    assert configuration_problems(study) == [
        f"Template {CHEAP} {version} is {status} (LLMs solve it too often) and cannot be used: "
        "take it out of the pool or replace it with a revised version."
    ]


def test_admin_shows_the_setting_and_each_pool_templates_status(admin_client: Client) -> None:
    study = journey_study(status=Study.Status.DRAFT)
    version = _set(CHEAP, TemplateStatus.Status.ACCEPTED)
    page = admin_client.get(f"/admin/study/study/{study.pk}/change/").content.decode()
    assert 'name="allow_unvalidated_templates"' in page
    for name in (
        "sequence_set",
        "balance_priority",
        "expected_dropout",
        "tracks-0-target_participants",
        "pool-0-cross_track",
    ):
        assert f'name="{name}"' in page
    assert "Rejected and compromised templates are never allowed." in page
    assert f"accepted (v{version})" in page
    other = JOURNEY_TEMPLATES[1][0]
    assert f"unvalidated (v{load_template(other).version})" in page
    # Retired templates are offered only to the entries that already use them.
    assert f"{CHEAP} — retired on 2026-12-02 (v{version})" in page
    options = page.split('name="pool-0-template_slug"', 1)[1].split("</select>", 1)[0]
    assert options.count("retired on") == 1


def test_a_template_of_another_track_is_refused_unless_marked_cross_track(
    admin_client: Client,
) -> None:
    study = journey_study(status=Study.Status.DRAFT)
    mle = study.tracks.get(code="MLE")
    active = "sde-statement-import"
    form = PoolEntryForm(
        data={"track": mle.pk, "template_slug": active, "active": "on"},
        instance=TaskPoolEntry(study=study),
    )
    assert not form.is_valid()
    assert form.non_field_errors() == [
        f"Template {active} belongs to the SDE track, but it is in the MLE pool: move it to the "
        "SDE pool, or tick cross-track on the entry to use it here anyway."
    ]
    marked = PoolEntryForm(
        data={"track": mle.pk, "template_slug": active, "active": "on", "cross_track": "on"},
        instance=TaskPoolEntry(study=study),
    )
    assert marked.is_valid(), marked.errors
    message = (
        f"Template {CHEAP} belongs to the SDE track, but it is in the MLE pool: move it to the "
        "SDE pool, or tick cross-track on the entry to use it here anyway."
    )
    # An entry made outside the admin is caught before recruitment opens.
    study.pool.filter(track=mle, template_slug=CHEAP).update(cross_track=False)
    assert message in configuration_problems(study)
    with pytest.raises(CannotOpen, match="belongs to the SDE track, but it is in the MLE pool"):
        open_recruitment(study, actor=None)
    # Marked cross-track: allowed, and the study's page says so.
    study.pool.filter(track=mle, template_slug=CHEAP).update(cross_track=True)
    assert configuration_problems(study) == []
    page = admin_client.get(f"/admin/study/study/{study.pk}/change/").content.decode()
    assert f"The MLE pool holds {CHEAP} from the SDE track (cross-track)" in page


def test_opening_recruitment_warns_about_the_expected_imbalance(admin_client: Client) -> None:
    study = journey_study(
        status=Study.Status.DRAFT, target_participants=10, balance_priority="difficulty"
    )
    response = admin_client.post(
        "/admin/study/study/",
        {"action": "open_recruitment", "_selected_action": [study.pk]},
        follow=True,
    )
    page = response.content.decode()
    study.refresh_from_db()
    assert study.status == Study.Status.RECRUITING
    assert "is now recruiting." in page
    # Both 4-task pools are given whole to every participant of the track: uses are even, but
    # 5 participants per track cannot split each task 50/50 between the conditions.
    assert "Track MLE: a target of 5 cannot give every task the same number of uses per" in page
    assert "The MLE pool holds sde-clickomania from the SDE track (cross-track)" in page
    event = AuditEvent.objects.filter(action=CONFIG_CHANGE, details__change="status").last()
    assert event is not None
    assert event.details["n_warnings"] == page.count('class="warning"')
    assert len(event.details["warnings_sha256"]) == 64
