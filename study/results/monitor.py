"""The live monitor's data: one page of a study's participants with their current trial, time
left, grading status, integrity flags and withdrawals, plus study-wide counts.

A page costs a fixed number of queries whatever the study's size (participants are paginated,
``PAGE_SIZE`` per page): the page count, the page itself, its trials, one query per registered flag
provider (``study.metrics``), the stage counts and the grading queue. The page is rendered by
``templates/study/results/monitor.html``; its rows (``_monitor_rows.html``) are re-read by htmx
from the ``monitor_rows`` view, every few seconds and on a push from
``study.results.consumers.MonitorConsumer`` (``static/js/monitor.js``). ``monitor.json`` serves
the same data to API users.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.urls import reverse

from study.metrics import trial_flags
from study.models import Participant, Study, Trial

PAGE_SIZE = 50
MAX_SEARCH = 64
Stage = Participant.Stage
ENDED_STAGES = {Stage.COMPLETE, Stage.DECLINED, Stage.WITHDRAWN, Stage.EXCLUDED}
GRADING_PENDING = ("queued", "running")


@dataclass(frozen=True)
class Filters:
    stage: str = ""  # a Participant.Stage value, "active" (still taking part) or "" (all)
    track: str = ""  # a track code or ""
    q: str = ""  # part of the pseudonym, or the start of the internal id
    page: int = 1

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> Filters:
        stage = params.get("stage", "")
        if stage not in {*Stage.values, "active"}:
            stage = ""
        try:
            page = max(int(params.get("page", "1")), 1)
        except ValueError:
            page = 1
        return cls(
            stage=stage,
            track=params.get("track", "")[:3].upper(),
            q=params.get("q", "").strip()[:MAX_SEARCH],
            page=page,
        )

    def query(self, **changes: Any) -> dict[str, Any]:
        """The filters as URL parameters (empty ones left out), with ``changes`` applied."""
        values = {**asdict(self), **changes}
        return {k: v for k, v in values.items() if v and not (k == "page" and v == 1)}


def _participants(study: Study, filters: Filters) -> Any:
    qs = Participant.objects.filter(study=study)
    if filters.stage == "active":
        qs = qs.exclude(stage__in=ENDED_STAGES)
    elif filters.stage:
        qs = qs.filter(stage=filters.stage)
    if filters.track:
        qs = qs.filter(track__code=filters.track)
    if filters.q:
        qs = qs.filter(
            Q(user__username__icontains=filters.q) | Q(internal_id__startswith=filters.q)
        )
    return qs.select_related("user", "track").order_by("created_at", "pk")


def _seconds(later: datetime | None, now: datetime) -> int | None:
    return max(int((later - now).total_seconds()), 0) if later else None


def _trial(t: Mapping[str, Any], flags: dict[str, int], now: datetime) -> dict[str, Any]:
    return {
        "id": t["pk"],
        "period": t["period"],
        "session": t["session_index"],
        "condition": t["arm__condition"],
        "ai_mode": t["arm__ai_mode"],
        "template": t["template_slug"],
        "status": t["status"],
        "deadline": t["deadline"].isoformat() if t["deadline"] else None,
        "time_left_s": _seconds(t["deadline"], now) if t["status"] == Trial.Status.ACTIVE else None,
        "grading": t["evaluation__status"],
        "tests_done": t["evaluation__tests_done"],
        "tests_total": t["evaluation__tests_total"],
        "flags": sum(flags.values()),
        "report_url": reverse("study:researcher_trial_report", args=[t["pk"]]),
    }


def _row(p: Participant, trials: list[dict[str, Any]], now: datetime) -> dict[str, Any]:
    current = next((t for t in trials if t["status"] == Trial.Status.ACTIVE), None)
    upcoming = next((t for t in trials if t["status"] == Trial.Status.PENDING), None)
    grading = Counter(t["grading"] for t in trials if t["grading"])
    flag_total = sum(t["flags"] for t in trials)
    return {
        "id": p.pk,
        "pseudonym": p.user.username,
        "internal_id": p.internal_id,
        "stage": p.stage,
        "stage_label": p.get_stage_display(),
        "active": p.stage not in ENDED_STAGES,
        "track": p.track.code if p.track else None,
        "session": p.session_index,
        "current_trial": current,
        "next_trial": None if current else upcoming,
        "trials": trials,
        "trials_ended": sum(
            t["status"] in (Trial.Status.SUBMITTED, Trial.Status.EXPIRED) for t in trials
        ),
        "trials_total": len(trials),
        "grading": dict(grading),
        "grading_pending": sum(grading[s] for s in GRADING_PENDING),
        "flags": flag_total,
        "withdrawn": p.stage == Stage.WITHDRAWN,
        "ended_reason": p.exclusion_reason if p.stage in (Stage.WITHDRAWN, Stage.EXCLUDED) else "",
        "ended_at": p.ended_at.isoformat() if p.ended_at else None,
        "next_session_in_s": _seconds(p.next_session_opens_at, now),
        "last_activity_at": p.last_activity_at.isoformat() if p.last_activity_at else None,
    }


def summary(study: Study) -> dict[str, Any]:
    """Study-wide counts (three queries): stages, active trials, the grading queue."""
    stages = dict(
        Participant.objects.filter(study=study)
        .order_by()
        .values("stage")
        .annotate(n=Count("pk"))
        .values_list("stage", "n")
    )
    study_trials = Trial.objects.filter(participant__study=study).order_by()
    grading = dict(
        study_trials.filter(evaluation__status__in=GRADING_PENDING)
        .values("evaluation__status")
        .annotate(n=Count("pk"))
        .values_list("evaluation__status", "n")
    )
    return {
        "participants": sum(stages.values()),
        "stages": {stage: stages.get(stage, 0) for stage in Stage.values},
        "active": sum(n for stage, n in stages.items() if stage not in ENDED_STAGES),
        "withdrawn": stages.get(Stage.WITHDRAWN, 0),
        "trials_active": study_trials.filter(status=Trial.Status.ACTIVE).count(),
        "grading_queued": grading.get("queued", 0),
        "grading_running": grading.get("running", 0),
    }


def monitor_page(study: Study, filters: Filters, now: datetime) -> dict[str, Any]:
    paginator = Paginator(_participants(study, filters), PAGE_SIZE)
    page = paginator.get_page(filters.page)
    participants = list(page.object_list)
    trials = list(
        Trial.objects.filter(participant_id__in=[p.pk for p in participants])
        .order_by("participant_id", "period")
        .values(
            "pk",
            "participant_id",
            "period",
            "session_index",
            "status",
            "deadline",
            "template_slug",
            "arm__condition",
            "arm__ai_mode",
            "evaluation__status",
            "evaluation__tests_done",
            "evaluation__tests_total",
        )
    )
    flags = trial_flags(t["pk"] for t in trials)
    by_participant: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for t in trials:
        by_participant[t["participant_id"]].append(_trial(t, flags.get(t["pk"], {}), now))
    return {
        "study": {"slug": study.slug, "title": study.title, "status": study.status},
        "server_time": now.isoformat(),
        "filters": asdict(filters) | {"page": page.number},
        "page": {
            "number": page.number,
            "pages": paginator.num_pages,
            "count": paginator.count,
            "size": PAGE_SIZE,
            "has_next": page.has_next(),
            "has_previous": page.has_previous(),
        },
        "summary": summary(study),
        "participants": [_row(p, by_participant[p.pk], now) for p in participants],
    }
