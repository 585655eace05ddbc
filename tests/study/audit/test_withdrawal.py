"""Withdrawal by the participant (button) or by a researcher (admin action), per the study's
policy: "keep" stops participation only; "delete" also deletes answers, working code, the
trials' telemetry (through ``participant_data_deleted``) and the vault contact. Both release
the plan's slot, deactivate the account, write a tombstone and an audit event."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from study.assignment.services import counted_assignments
from study.audit import log as audit
from study.audit.withdrawal import withdraw_participant
from study.demo.answers import answers_for
from study.enrolment.services import give_consent, submit_screening
from study.models import (
    AuditEvent,
    Participant,
    Study,
    TaskPoolEntry,
    Trial,
    User,
    Withdrawal,
)
from study.models.withdrawal import internal_id_digest
from study.signals import participant_data_deleted
from study.trials.services import save_draft, start_trial
from study.vault.models import VaultEntry
from study.vault.services import store_contact
from tests.study.helpers import JOURNEY_TEMPLATES, journey_study, logged_in

pytestmark = pytest.mark.django_db
Stage = Participant.Stage


def quick_study(**fields: Any) -> Study:
    """A journey study with one session of two trials on the quick-to-instantiate templates."""
    study = journey_study(sessions=1, **fields)
    slow = [slug for slug, difficulty in JOURNEY_TEMPLATES if difficulty == "hard"]
    TaskPoolEntry.objects.filter(study=study, template_slug__in=slow).update(active=False)
    return study


def enrolled(study: Study) -> tuple[Client, Participant]:
    """A logged-in participant who consented, was screened and assigned, started trial 1 and
    left a draft and contact data behind."""
    client, participant = logged_in(study)
    form = study.consent_form
    screening = study.screening
    assert form is not None
    assert screening is not None
    give_consent(participant, agree=True, checkboxes={box["id"]: True for box in form.checkboxes})
    submit_screening(participant, answers_for(screening, random.Random(1)))
    trial = participant.trials.order_by("period").first()
    assert trial is not None
    now = timezone.now()
    start_trial(trial, now)
    save_draft(trial, {"solution.py": "def solve():\n    return 42\n"}, now)
    store_contact(participant.internal_id, study.slug, email="ada@example.org")
    participant.refresh_from_db()
    return client, participant


@pytest.fixture
def deleted_signals() -> Iterator[list[dict[str, Any]]]:
    """Records ``participant_data_deleted`` and answers like ide_bridge would."""
    calls: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> dict[str, int]:
        calls.append(kwargs)
        return {"telemetry_events": 5, "ai_requests": 2}

    participant_data_deleted.connect(receiver, dispatch_uid="test-withdrawal")
    yield calls
    participant_data_deleted.disconnect(dispatch_uid="test-withdrawal")


def test_participant_withdraws_under_keep_policy(deleted_signals: list[dict[str, Any]]) -> None:
    study = quick_study(withdrawal_policy=Study.WithdrawalPolicy.KEEP)
    client, participant = enrolled(study)
    assert counted_assignments(study).count() == 1

    assert client.post("/study/journey/withdraw/").status_code == 302

    participant.refresh_from_db()
    assert participant.stage == Stage.WITHDRAWN
    assert participant.responses.exists()  # data collected so far is kept
    assert participant.trials.exclude(draft_files={}).exists()
    assert VaultEntry.objects.filter(internal_id=participant.internal_id).exists()
    assert deleted_signals == []
    assert participant.assignment.released
    assert counted_assignments(study).count() == 0  # the slot is free again
    participant.user.refresh_from_db()
    assert participant.user.is_active is False

    tombstone = Withdrawal.objects.get(participant=participant)
    assert (tombstone.channel, tombstone.scope) == ("participant", "keep")
    assert tombstone.internal_id_sha256 == internal_id_digest(participant.internal_id)
    assert tombstone.processed_by == participant.user.username
    assert tombstone.removed == {}
    event = AuditEvent.objects.get(action=audit.WITHDRAWAL)
    assert (event.actor_type, event.actor_ref) == ("participant", participant.user.username)
    assert event.details["scope"] == "keep"
    assert event.details["plan_released"] is True
    assert audit.verify_chain().ok


def test_participant_withdraws_under_delete_policy(deleted_signals: list[dict[str, Any]]) -> None:
    study = quick_study(withdrawal_policy=Study.WithdrawalPolicy.DELETE)
    client, participant = enrolled(study)
    trial_ids = sorted(participant.trials.values_list("pk", flat=True))

    client.post("/study/journey/withdraw/")

    participant.refresh_from_db()
    assert participant.stage == Stage.WITHDRAWN
    assert not participant.responses.exists()
    assert not participant.trials.exclude(draft_files={}).exists()
    assert sorted(participant.trials.values_list("pk", flat=True)) == trial_ids  # trials stay
    assert not VaultEntry.objects.filter(internal_id=participant.internal_id).exists()
    sent = [(call["participant_id"], call["trial_ids"]) for call in deleted_signals]
    assert sent == [(participant.pk, trial_ids)]
    assert counted_assignments(study).count() == 0

    tombstone = Withdrawal.objects.get(participant=participant)
    assert tombstone.scope == "delete"
    assert tombstone.removed["responses"] == 1
    assert tombstone.removed["trial_drafts"] == 1
    assert tombstone.removed["vault_entries"] == 1
    assert tombstone.removed["telemetry_events"] == 5
    assert tombstone.removed["ai_requests"] == 2
    event = AuditEvent.objects.get(action=audit.WITHDRAWAL)
    assert event.details["removed"] == tombstone.removed
    assert "ada@example.org" not in str(event.details)


def test_researcher_withdraws_a_participant_from_the_admin(
    admin_client: Client, admin_user: User, deleted_signals: list[dict[str, Any]]
) -> None:
    study = quick_study(withdrawal_policy=Study.WithdrawalPolicy.DELETE)
    _, participant = enrolled(study)
    url = "/admin/study/participant/"
    selection = {"action": "withdraw_participants", "_selected_action": [participant.pk]}

    page = admin_client.post(url, selection)
    assert page.status_code == 200
    text = page.content.decode()
    assert participant.user.username in text
    assert "contact data are deleted" in text
    participant.refresh_from_db()
    assert participant.stage == Stage.IN_SESSION  # nothing happens before the confirmation

    admin_client.post(url, {**selection, "apply": "1"})  # not confirmed: the page again
    participant.refresh_from_db()
    assert participant.stage == Stage.IN_SESSION

    admin_client.post(url, {**selection, "apply": "1", "confirm": "on"})
    participant.refresh_from_db()
    assert participant.stage == Stage.WITHDRAWN
    assert not participant.responses.exists()
    assert len(deleted_signals) == 1
    tombstone = Withdrawal.objects.get(participant=participant)
    assert (tombstone.channel, tombstone.processed_by) == ("researcher", admin_user.username)
    event = AuditEvent.objects.get(action=audit.WITHDRAWAL)
    assert (event.actor_type, event.actor_ref) == ("staff", admin_user.username)
    assert event.details["channel"] == "researcher"


def test_withdrawing_twice_or_after_the_end_changes_nothing(admin_client: Client) -> None:
    study = quick_study()
    _, participant = enrolled(study)
    assert withdraw_participant(participant) is not None
    assert withdraw_participant(participant) is None
    Participant.objects.filter(pk=participant.pk).update(stage=Stage.COMPLETE)
    response = admin_client.post(
        "/admin/study/participant/",
        {
            "action": "withdraw_participants",
            "_selected_action": [participant.pk],
            "apply": "1",
            "confirm": "on",
        },
        follow=True,
    )
    assert "had already ended their participation" in response.content.decode()
    assert Withdrawal.objects.count() == 1
    assert AuditEvent.objects.filter(action=audit.WITHDRAWAL).count() == 1


def test_declining_a_new_consent_version_is_a_withdrawal() -> None:
    study = quick_study()
    _, participant = enrolled(study)
    withdraw_participant(participant, channel="declined re-consent")
    assert Withdrawal.objects.get().channel == Withdrawal.Channel.RECONSENT
    with pytest.raises(ValueError, match="Unknown withdrawal channel"):
        withdraw_participant(participant, channel="carrier pigeon")


def test_a_failing_receiver_rolls_the_withdrawal_back() -> None:
    study = quick_study(withdrawal_policy=Study.WithdrawalPolicy.DELETE)
    _, participant = enrolled(study)

    def broken(sender: Any, **kwargs: Any) -> None:
        raise RuntimeError("telemetry store unavailable")

    participant_data_deleted.connect(broken, dispatch_uid="test-broken")
    try:
        with pytest.raises(RuntimeError):
            withdraw_participant(participant)
    finally:
        participant_data_deleted.disconnect(dispatch_uid="test-broken")
    participant.refresh_from_db()
    assert participant.stage == Stage.IN_SESSION
    assert participant.responses.exists()
    assert Trial.objects.filter(participant=participant).exclude(draft_files={}).exists()
    assert VaultEntry.objects.filter(internal_id=participant.internal_id).exists()
    assert not Withdrawal.objects.exists()
    assert not AuditEvent.objects.filter(action=audit.WITHDRAWAL).exists()
