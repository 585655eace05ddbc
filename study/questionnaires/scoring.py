"""Scale scores of a response and the track a screening response decides.

Scales: ``Item.scale`` names the scale a numeric item scores into (``nasa_tlx``); a ``:r``
suffix (``usability:r``) reverse-scores it within the item's range. ``scale_scores`` returns
the mean of each scale's answered items.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from django.db.models import Count, Q

from study.models import Answer, Item, Participant, Response, Study, Track
from study.questionnaires.forms import LIKERT_POINTS, T

ENDED_STAGES = (
    Participant.Stage.DECLINED,
    Participant.Stage.WITHDRAWN,
    Participant.Stage.EXCLUDED,
)


def answers_by_key(response: Response) -> dict[str, Any]:
    return {a.item.key: a.value for a in response.answers.select_related("item")}


def _bounds(item: Item) -> tuple[float, float] | None:
    if item.type in LIKERT_POINTS:
        return 1.0, float(LIKERT_POINTS[T(item.type)])
    if item.min_value is not None and item.max_value is not None:
        return item.min_value, item.max_value
    return None


def score_answers(answers: Iterable[tuple[Item, Any]]) -> dict[str, tuple[float, int]]:
    """Scale -> (mean of its answered numeric items, how many) over (item, value) pairs;
    ``:r`` items are reverse-scored within their range."""
    values: dict[str, list[float]] = defaultdict(list)
    for item, value in answers:
        if not item.scale or isinstance(value, bool) or not isinstance(value, int | float):
            continue
        name, _, flag = item.scale.partition(":")
        bounds = _bounds(item)
        if flag == "r" and bounds is not None:
            value = bounds[0] + bounds[1] - value
        values[name].append(float(value))
    return {name: (math.fsum(v) / len(v), len(v)) for name, v in sorted(values.items())}


def scale_scores(response: Response) -> dict[str, float]:
    """Mean of each scale's answered numeric items, e.g. ``{"nasa_tlx": 42.5}`` (raw TLX)."""
    answers = ((a.item, a.value) for a in response.answers.select_related("item"))
    return {name: score for name, (score, _) in score_answers(answers).items()}


# --- Tracks -------------------------------------------------------------------------------
def least_filled_track(study: Study) -> Track | None:
    """The track furthest below its target (``study.assignment.targets.track_targets``),
    counting participants still taking part or complete; ties go to the first code. Without
    any known target: the track with the fewest such participants."""
    from study.assignment.targets import track_targets  # assignment builds on questionnaires

    tracks = list(
        study.tracks.annotate(
            n=Count("participants", filter=~Q(participants__stage__in=ENDED_STAGES))
        ).order_by("code")
    )
    targets = track_targets(study)
    below = [
        (target.value - t.n, -i, t)
        for i, t in enumerate(tracks)
        if (target := targets.get(t.code)) is not None and target.value is not None
    ]
    if below:
        return max(below, key=lambda item: item[:2])[2]
    return min(tracks, key=lambda t: (t.n, t.code), default=None)


def decide_track(study: Study, response: Response) -> Track | None:
    """The track named by the screening answer ``study.track_item_key`` (a track code), or the
    least-filled track for "no preference", a missing answer or a track the study lacks."""
    if study.track_item_key:
        answer = (
            Answer.objects.filter(response=response, item__key=study.track_item_key)
            .values_list("value", flat=True)
            .first()
        )
        if isinstance(answer, str) and answer.strip():
            track = study.tracks.filter(code=answer.strip().upper()).first()
            if track is not None:
                return track
    return least_filled_track(study)
