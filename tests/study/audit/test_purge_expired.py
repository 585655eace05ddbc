"""``manage.py purge_expired``: after a closed study's retention periods, contact data leaves
the vault and telemetry is purged (through ``telemetry_purge_requested``); what was removed is
printed and audited. Open studies and studies within their periods are left alone."""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.core.management import call_command
from django.utils import timezone

from study.assignment.services import assign_plan
from study.audit import log as audit
from study.audit.retention import close_study
from study.models import AuditEvent, Participant, RetentionPolicy, Study
from study.signals import telemetry_purge_requested
from study.vault.models import VaultEntry
from study.vault.services import store_contact
from tests.study.factories_study import make_participant, make_study
from tests.study.helpers import JOURNEY_TEMPLATES

pytestmark = pytest.mark.django_db


def study_with_contacts(slug: str, n: int = 2, **fields: Any) -> tuple[Study, list[Participant]]:
    study = make_study(slug=slug, **fields)
    participants = [make_participant(study) for _ in range(n)]
    for participant in participants:
        store_contact(participant.internal_id, study.slug, email=f"{participant.pk}@example.org")
    return study, participants


def closed_days_ago(study: Study, days: int, **policy: Any) -> RetentionPolicy:
    close_study(study, now=timezone.now() - timedelta(days=days))
    RetentionPolicy.objects.filter(study=study).update(**policy)
    return RetentionPolicy.objects.get(study=study)


def purge(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("purge_expired", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def vault_slugs() -> list[str]:
    return sorted(set(VaultEntry.objects.values_list("study_slug", flat=True)))


@pytest.fixture
def telemetry_calls() -> Iterator[list[dict[str, Any]]]:
    """Records ``telemetry_purge_requested`` and answers like ide_bridge would."""
    calls: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> dict[str, int]:
        calls.append(kwargs)
        return {"telemetry_events": 7 * len(kwargs["trial_ids"])}

    telemetry_purge_requested.connect(receiver, dispatch_uid="test-purge")
    yield calls
    telemetry_purge_requested.disconnect(dispatch_uid="test-purge")


def test_contact_data_of_studies_past_their_period_is_deleted(
    telemetry_calls: list[dict[str, Any]],
) -> None:
    expired, _ = study_with_contacts("expired", n=3)
    recent, _ = study_with_contacts("recent")
    running, _ = study_with_contacts("running", status=Study.Status.RECRUITING)
    closed_days_ago(expired, 91)
    closed_days_ago(recent, 10)

    out, err = purge()

    assert vault_slugs() == ["recent", "running"]
    assert "expired: removed 3 vault_entries" in out
    assert "Removed in total: 3 vault_entries." in out
    assert err == ""
    assert telemetry_calls == []  # telemetry_days not set: telemetry is kept
    event = AuditEvent.objects.get(action=audit.PURGE)
    assert (event.actor_type, event.object_id) == ("system", str(expired.pk))
    assert event.details["removed"] == {"vault_entries": 3}
    assert event.details["contact_days"] == 90
    assert audit.verify_chain().ok
    assert running.status == Study.Status.RECRUITING


def test_a_dry_run_only_counts() -> None:
    expired, _ = study_with_contacts("expired")
    closed_days_ago(expired, 120)
    events_before = AuditEvent.objects.count()

    out, _ = purge("--dry-run")

    assert "expired: would remove 2 vault_entries" in out
    assert "Would remove in total: 2 vault_entries." in out
    assert vault_slugs() == ["expired"]
    assert AuditEvent.objects.count() == events_before


def test_a_second_run_finds_nothing_and_audits_nothing() -> None:
    expired, _ = study_with_contacts("expired")
    closed_days_ago(expired, 120)
    purge()
    purged = AuditEvent.objects.filter(action=audit.PURGE).count()
    out, _ = purge()
    assert "Removed in total: nothing." in out
    assert AuditEvent.objects.filter(action=audit.PURGE).count() == purged == 1


def test_telemetry_is_purged_through_the_signal_after_its_period(
    telemetry_calls: list[dict[str, Any]],
) -> None:
    study = make_study(slug="tele", templates=JOURNEY_TEMPLATES[:4])
    participant = make_participant(study)
    assign_plan(participant, rng_seed=1)
    trial_ids = sorted(participant.trials.values_list("pk", flat=True))
    assert len(trial_ids) == 4
    policy = closed_days_ago(study, 40, telemetry_days=30, contact_days=365)

    out, _ = purge("--dry-run")
    assert "tele: would remove 28 telemetry_events" in out
    out, _ = purge()
    assert "tele: removed 28 telemetry_events" in out

    assert [call["dry_run"] for call in telemetry_calls] == [True, False]
    call = telemetry_calls[-1]
    assert (call["study_id"], call["trial_ids"]) == (study.pk, trial_ids)
    assert policy.closed_at is not None
    assert call["before"] == policy.closed_at + timedelta(days=30)
    assert isinstance(call["before"], datetime)
    event = AuditEvent.objects.get(action=audit.PURGE)
    assert event.details["removed"] == {"telemetry_events": 28}


def test_telemetry_within_its_period_is_kept(telemetry_calls: list[dict[str, Any]]) -> None:
    study = make_study(slug="tele")
    closed_days_ago(study, 20, telemetry_days=30)
    purge()
    assert telemetry_calls == []


def test_a_closed_study_without_a_closing_time_is_reported() -> None:
    study, _ = study_with_contacts("legacy", status=Study.Status.CLOSED)
    _, err = purge()
    assert "legacy is closed but its closing time is unknown" in err
    assert vault_slugs() == ["legacy"]
    assert study.status == Study.Status.CLOSED
