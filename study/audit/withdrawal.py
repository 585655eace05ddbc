"""Withdrawal: stop participation at once, handle the data per the study's policy.

Steps (privacy notes section 7), all in one transaction:

1. release an unfinished plan's slot (balance counts move on);
2. under the study's "delete" policy, delete the participant's research data: questionnaire
   responses, working code and the links to graded submissions (``Trial`` rows stay for the
   balance and the design), whatever ``ide_bridge`` keeps for the trials (telemetry, AI requests:
   the ``participant_data_deleted`` signal) and the vault entry with the contact data;
3. move the participant to ``withdrawn`` and deactivate the account;
4. write the tombstone (:class:`~study.models.Withdrawal`) and an audit event.

Under the "keep" policy data collected so far stays (US Common Rule); nothing more is recorded.
Consent records are kept under both policies (retention of consent documentation).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.db import transaction
from django.utils import timezone

from study.assignment.services import release_plan
from study.audit import log as audit
from study.journey.services import transition
from study.models import Participant, Response, Study, Trial, Withdrawal
from study.models.withdrawal import internal_id_digest
from study.signals import participant_data_deleted, removed_counts
from study.vault.services import delete_contact

if TYPE_CHECKING:
    from study.audit.log import Actor

Stage = Participant.Stage
ENDED = (Stage.WITHDRAWN, Stage.EXCLUDED, Stage.DECLINED, Stage.COMPLETE)
# Earlier spellings of the channel, kept so old callers keep working.
CHANNEL_ALIASES = {
    "participant button": Withdrawal.Channel.PARTICIPANT,
    "declined re-consent": Withdrawal.Channel.RECONSENT,
}


def channel_of(channel: str) -> Withdrawal.Channel:
    if channel in CHANNEL_ALIASES:
        return CHANNEL_ALIASES[channel]
    try:
        return Withdrawal.Channel(channel)
    except ValueError:
        raise ValueError(f"Unknown withdrawal channel {channel!r}.") from None


def scope_for(study: Study) -> Withdrawal.Scope:
    if study.withdrawal_policy == Study.WithdrawalPolicy.DELETE:
        return Withdrawal.Scope.DELETE
    return Withdrawal.Scope.KEEP


@transaction.atomic
def withdraw_participant(
    participant: Participant, *, channel: str = "participant", by: Actor = None
) -> Withdrawal | None:
    """Withdraw ``participant`` (idempotent: None if their participation already ended).

    ``by``: who processed it (a researcher for ``channel="researcher"``); by default the
    participant themself, or the system.
    """
    kind = channel_of(channel)
    participant = (
        Participant.objects.select_for_update()
        .select_related("study", "user")
        .get(pk=participant.pk)
    )
    if participant.stage in ENDED:
        return None
    study, now = participant.study, timezone.now()
    if by is None and kind != Withdrawal.Channel.RESEARCHER:
        by = participant.user
    released = hasattr(participant, "assignment") and release_plan(participant) is not None
    scope = scope_for(study)
    removed = delete_research_data(participant) if scope == Withdrawal.Scope.DELETE else {}

    participant.user.is_active = False
    participant.user.save(update_fields=["is_active"])
    _, actor_ref = audit.actor_of(by)
    tombstone = Withdrawal.objects.create(
        participant=participant,
        study=study,
        internal_id_sha256=internal_id_digest(participant.internal_id),
        channel=kind,
        scope=scope,
        requested_at=now,
        processed_at=now,
        processed_by=actor_ref,
        removed=removed,
    )
    participant.ended_at = now
    participant.exclusion_reason = f"withdrawn ({channel})"
    transition(
        participant,
        Stage.WITHDRAWN,
        f"withdrawn ({channel})",
        now=now,
        fields=("ended_at", "exclusion_reason"),
        by=by,
        details={
            "channel": str(kind),
            "scope": str(scope),
            "plan_released": released,
            "withdrawal": tombstone.pk,
            "removed": removed,
        },
    )
    return tombstone


def delete_research_data(participant: Participant) -> dict[str, int]:
    """Delete a participant's research and contact data; returns counts per kind. Graded
    submissions stay in the engine, unlinked from the trial."""
    trial_ids = list(
        Trial.objects.filter(participant=participant).order_by("pk").values_list("pk", flat=True)
    )
    _, deleted = Response.objects.filter(participant=participant).delete()
    removed = {
        "responses": deleted.get("study.Response", 0),
        "answers": deleted.get("study.Answer", 0),
        "trial_drafts": Trial.objects.filter(participant=participant)
        .exclude(draft_files={}, draft_saved_at=None, submission=None, evaluation=None)
        .update(draft_files={}, draft_saved_at=None, submission=None, evaluation=None),
    }
    responses = participant_data_deleted.send(
        sender=Participant, participant_id=participant.pk, trial_ids=trial_ids
    )
    for kind, count in removed_counts(responses).items():
        removed[kind] = removed.get(kind, 0) + count
    removed["vault_entries"] = int(delete_contact(participant.internal_id))
    return removed
