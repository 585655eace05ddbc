"""Who is in a package, under which pseudonym, and with which quasi-identifier values.

Included: participants who agreed to the consent form and answered the screening questionnaire
(before that there is no research data). Never included: invited and declined people (counted
only). Withdrawn participants follow the scope recorded in their withdrawal tombstone
(:class:`~study.models.Withdrawal`), or the study's withdrawal policy when there is none:
``keep`` includes them as ``withdrawn_data_retained``; ``delete`` leaves them out. A "delete"
tombstone also excludes a participant row that came back from a backup. The report says how
many either way.

Release order is by pseudonym (then period), never by enrolment: row order must not leak who
joined first.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from study.configuration.snapshots import frozen_arm
from study.exports import kanon
from study.exports.pseudonyms import Pseudonymiser
from study.exports.registry import ExportContext, ParticipantRef, Profile, TrialRef
from study.models import (
    Answer,
    ConsentEvent,
    Participant,
    Questionnaire,
    Study,
    Trial,
    Withdrawal,
)
from study.models.withdrawal import internal_id_digest

Stage = Participant.Stage
STATUSES = ("complete", "session1_only", "incomplete", "withdrawn_data_retained", "excluded")
CLOSED = (Trial.Status.SUBMITTED, Trial.Status.EXPIRED)


@dataclass
class Selection:
    context: ExportContext
    counts: dict[str, int]
    kanon_report: dict[str, Any] = field(default_factory=dict)


def _status(stage: str, closed_sessions: set[int], open_s1: bool) -> str:
    if stage == Stage.WITHDRAWN:
        return "withdrawn_data_retained"
    if stage == Stage.EXCLUDED:
        return "excluded"
    if stage == Stage.COMPLETE:
        return "complete"
    if closed_sessions == {1} and not open_s1:
        return "session1_only"
    return "incomplete"


def _deleted(participant: Participant, tombstone: str | None, policy: str) -> bool:
    """Whether the person's research data must stay out of every package."""
    if tombstone is not None:
        return tombstone == Withdrawal.Scope.DELETE
    return participant.stage == Stage.WITHDRAWN and policy == Study.WithdrawalPolicy.DELETE


def _screening_values(pks: list[int]) -> dict[int, dict[str, str]]:
    """participant pk -> QI name -> level-0 value, from the screening answers."""
    by_item = {q.source.split(".", 1)[1]: q.name for q in kanon.SCREENING_QIS}
    rows = Answer.objects.filter(
        response__participant_id__in=pks,
        response__version__questionnaire__kind=Questionnaire.Kind.SCREENING,
        item__key__in=list(by_item),
    ).values_list("response__participant_id", "item__key", "value")
    values: dict[int, dict[str, str]] = {pk: {} for pk in pks}
    for pk, key, value in rows:
        values[pk][by_item[key]] = value if isinstance(value, str) else kanon.MISSING
    return values


def select(study: Study, profile: Profile, pseudonymise: Pseudonymiser) -> Selection:
    counts: Counter[str] = Counter()
    policy = study.withdrawal_policy
    consented = set(
        ConsentEvent.objects.filter(participant__study=study, decision="agree").values_list(
            "participant_id", flat=True
        )
    )
    screened = set(
        Answer.objects.filter(
            response__participant__study=study,
            response__version__questionnaire__kind=Questionnaire.Kind.SCREENING,
        ).values_list("response__participant_id", flat=True)
    )
    tombstones = dict(
        Withdrawal.objects.filter(study=study).values_list("internal_id_sha256", "scope")
    )
    candidates = list(
        Participant.objects.filter(study=study)
        .select_related("user", "track", "snapshot", "assignment")
        .order_by("pk")
    )
    chosen: list[Participant] = []
    for p in candidates:
        counts["n_in_study"] += 1
        if p.stage == Stage.DECLINED:
            counts["n_declined"] += 1
        elif p.pk not in consented:
            counts["n_not_consented"] += 1
        elif _deleted(p, tombstones.get(internal_id_digest(p.internal_id)), policy):
            counts["n_withdrawn_excluded"] += 1
        elif p.pk not in screened:
            counts["n_consented_without_data"] += 1
        else:
            if p.stage == Stage.WITHDRAWN:
                counts["n_withdrawn_kept"] += 1
            chosen.append(p)
    counts.setdefault("n_withdrawn_excluded", 0)
    counts.setdefault("n_withdrawn_kept", 0)
    pks = [p.pk for p in chosen]

    trials = list(
        Trial.objects.filter(participant_id__in=pks)
        .select_related("arm")
        .only(
            "pk", "participant_id", "session_index", "period", "status", "started_at",
            "ended_at", "arm__condition", "arm__ai_mode", "arm__ide", "arm__time_limit_min",
        )
    )  # fmt: skip
    closed: dict[int, set[int]] = {pk: set() for pk in pks}
    open_s1: set[int] = set()
    for t in trials:
        if t.status in CLOSED:
            closed[t.participant_id].add(t.session_index)
        elif t.session_index == 1:
            open_s1.add(t.participant_id)

    refs: dict[int, ParticipantRef] = {}
    for p in chosen:
        assignment = getattr(p, "assignment", None)
        refs[p.pk] = ParticipantRef(
            pk=p.pk,
            pseudonym=pseudonymise(p.internal_id),
            internal_id=p.internal_id,
            username=p.user.username,
            status=_status(p.stage, closed[p.pk], p.pk in open_s1),
            track=p.track.code if p.track else "",
            sequence=assignment.sequence if assignment else "",
        )
        counts[f"n_status_{refs[p.pk].status}"] += 1
    counts["n_included"] = len(refs)
    order = sorted(refs.values(), key=lambda r: r.pseudonym)
    participants = {r.pk: r for r in order}

    snapshots = {p.pk: (p.snapshot.content if p.snapshot else None) for p in chosen}
    trial_refs = []
    for t in trials:
        arm = frozen_arm(snapshots[t.participant_id], t.arm)
        trial_refs.append(
            TrialRef(
                pk=t.pk,
                participant=participants[t.participant_id],
                session_index=t.session_index,
                period=t.period,
                condition=t.arm.condition,
                ai_mode=str(arm["ai_mode"]),
                ide=str(arm["ide"]),
                time_limit_s=int(arm["time_limit_min"]) * 60,
                started_at=t.started_at,
                ended_at=t.ended_at,
            )
        )
    trial_refs.sort(key=lambda r: (r.participant.pseudonym, r.period))

    raw = _screening_values(pks)
    ladders = kanon.SCREENING_QIS
    names = [q.name for q in ladders]
    quasi: dict[int, dict[str, str]] = raw
    report: dict[str, Any]
    if profile.generalize_quasi_identifiers:
        result = kanon.anonymise(
            raw, ladders, k=profile.k, max_suppressed_share=profile.max_suppressed_share
        )
        quasi = result.values
        report = kanon.describe(result, ladders)
        # Informational: track is a design variable (released in every table) chosen from a
        # stated preference nobody outside can observe, so it is not a QI; a privacy office may
        # still want to know how small the classes are within a track.
        with_track = {pk: {**quasi[pk], "track": participants[pk].track} for pk in quasi}
        report["k_including_track"] = kanon.k_of(with_track, [*names, "track"])
        report["k_including_track_note"] = (
            "informational: track is a design variable, not treated as a quasi-identifier"
        )
    else:
        report = {
            "k_target": None,
            "quasi_identifiers": names,
            "note": "this profile releases quasi-identifiers as collected (not generalised)",
            "k_as_collected": kanon.k_of(raw, names),
        }
    context = ExportContext(
        study=study,
        profile=profile,
        scope=pseudonymise.scope,
        pseudonymise=pseudonymise,
        participants=participants,
        trials={r.pk: r for r in trial_refs},
        quasi=quasi,
    )
    return Selection(context=context, counts=dict(counts), kanon_report=report)
