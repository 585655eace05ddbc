"""Per-track targets: how many participants each track should end with, the number exact fill
aims at (``services.assign_plan``), no-preference screening routes by (``questionnaires``) and the
simulation recruits towards. Read-only."""

from __future__ import annotations

from dataclasses import dataclass

from study.models import Study, TaskPoolEntry, Track


@dataclass(frozen=True)
class Target:
    """How many participants a track should end with, and where that number comes from:
    ``track`` (set on the track), ``study`` (the study's target, one track) or ``study_split``
    (the study's target shared by the tracks without their own). ``None``: unknown, so
    balance relies on minimisation alone."""

    value: int | None
    source: str

    def describe(self) -> str:
        if self.value is None:
            return "no target (minimisation only)"
        return {
            "track": f"{self.value} participants (set on the track)",
            "study": f"{self.value} participants (the study's target)",
            "study_split": f"{self.value} participants (the study's target shared by the tracks)",
        }[self.source]


def track_targets(study: Study) -> dict[str, Target]:
    """The target of every track with active tasks (by track code): its own when set;
    otherwise an equal share of what the study's target leaves after the tracks with their
    own (the remainder goes to the first tracks in code order). With one such track and no
    own target, that is the study's target. Unknown when the own targets exceed the study's."""
    with_tasks = set(
        TaskPoolEntry.objects.filter(study=study, active=True).values_list("track", flat=True)
    )
    tracks = [t for t in study.tracks.order_by("code") if t.pk in with_tasks]
    own = {t.code: t.target_participants for t in tracks if t.target_participants is not None}
    shared = [t.code for t in tracks if t.code not in own]
    left = study.target_participants - sum(own.values())
    result = {code: Target(value, "track") for code, value in own.items()}
    for i, code in enumerate(shared):
        if left < len(shared):
            result[code] = Target(None, "study_split")
            continue
        share = left // len(shared) + (1 if i < left % len(shared) else 0)
        result[code] = Target(share, "study" if len(tracks) == 1 else "study_split")
    return result


def track_target(study: Study, track: Track) -> Target:
    return track_targets(study).get(track.code, Target(None, "study_split"))
