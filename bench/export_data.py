"""The export benchmark's data set (``export_bench.py``): a study of completed participants with
graded trials, questionnaires and AI requests, bulk-inserted, and telemetry events written with
``COPY ... FROM STDIN``. Django must be set up before these functions run."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime, timedelta
from typing import Any

SLUG = "bench"
SEQUENCES = ("ABBA", "BAAB", "ABAB", "BABA")
CODE = "def solve(data):\n    total = 0\n    for row in data:\n        total += row\n" * 2


def _report(slug: str, seed: int, passed: bool, rng: random.Random) -> dict[str, Any]:
    tests = [
        {"name": f"t{i}", "kind": "functional" if i < 12 else "performance", "visible": i < 3,
         "verdict": "OK" if passed or rng.random() < 0.6 else "WA"}
        for i in range(15)
    ]  # fmt: skip
    ok = sum(t["verdict"] == "OK" for t in tests)
    return {
        "schema_version": "1.0",
        "template": {"slug": slug, "version": "1.0.0", "content_hash": "ab" * 32},
        "instance": {"seed": seed, "content_hash": "cd" * 32},
        "solution_sha256": f"{seed:064x}"[-64:],
        "overall_pass": passed,
        "partial_pass": (ok + 2 * passed) / 17,
        "checks": {"passed": ok + 2 * passed, "total": 17},
        "tests": tests,
        "efficiency": {"time_ok": passed, "memory_ok": True},
        "completion_time_s": 1800 if passed else 3600,
    }


def _study() -> Any:
    from evaluation.models import TaskTemplate
    from study.models import Arm, Study, Track
    from study.questionnaires.instruments import attach_default_instruments

    study = Study.objects.create(slug=SLUG, title="Export benchmark", status="closed")
    for code in ("SDE", "MLE", "DS"):
        Track.objects.create(study=study, code=code)
    Arm.objects.create(study=study, condition="A", name="No AI", ai_mode="none")
    Arm.objects.create(study=study, condition="B", name="AI", ai_mode="inline_chat")
    attach_default_instruments(study)
    study.refresh_from_db()
    for i, (track, difficulty) in enumerate(
        [("SDE", "easy"), ("MLE", "medium"), ("DS", "hard"), ("SDE", "hard")]
    ):
        TaskTemplate.objects.create(
            slug=f"bench-task-{i}",
            version="1.0.0",
            title=f"Task {i}",
            track=track,
            difficulty=difficulty,
            content_hash=f"{i:064x}",
        )
    return study


def _participants(study: Any, n: int, rng: random.Random) -> list[Any]:
    from study.configuration.snapshots import current_snapshot
    from study.models import Assignment, ConsentEvent, Participant, User

    snapshot = current_snapshot(study)
    tracks = list(study.tracks.order_by("code"))
    users = User.objects.bulk_create(
        User(username=f"p-bench-{i:03d}", password="!")  # noqa: S106  (unusable password)
        for i in range(n)
    )
    participants = Participant.objects.bulk_create(
        Participant(
            study=study,
            user=user,
            internal_id=f"{rng.getrandbits(64):016x}",
            snapshot=snapshot,
            stage="complete",
            track=tracks[i % 3],
            session_index=2,
        )
        for i, user in enumerate(users)
    )
    form = study.consent_form
    ConsentEvent.objects.bulk_create(
        ConsentEvent(
            participant=p,
            form=form,
            form_sha256="0" * 64,
            decision="agree",
            rendered_html="",
            rendered_sha256="0" * 64,
            decided_at=datetime(2026, 3, 1, tzinfo=UTC),
        )
        for p in participants
    )
    Assignment.objects.bulk_create(
        Assignment(
            participant=p,
            study=study,
            track=p.track,
            sequence=SEQUENCES[i % 4],
            tasks=[f"bench-task-{t}" for t in range(4)],
            seed=i,
            counts_before={},
            min_score=0,
            n_tied=1,
            n_candidates=1,
            p_best=1.0,
            algorithm_version="bench",
        )
        for i, p in enumerate(participants)
    )
    return participants


def _trials(study: Any, participants: list[Any], rng: random.Random) -> list[Any]:
    from evaluation.models import Evaluation, Submission, TaskInstance, TaskTemplate
    from study.models import Trial

    templates = list(TaskTemplate.objects.filter(slug__startswith="bench-task-").order_by("slug"))
    arms = {arm.condition: arm for arm in study.arms.all()}
    trials, submissions, evaluations, instances = [], [], [], []
    for i, p in enumerate(participants):
        day = datetime(2026, 3, 2, 9, tzinfo=UTC) + timedelta(days=i % 20, minutes=7 * i)
        for period in range(1, 5):
            template = templates[(period + i) % 4]
            seed = rng.getrandbits(31)
            passed = rng.random() < 0.3
            instance = TaskInstance(template=template, seed=seed, params={}, content_hash="e" * 64)
            submission = Submission(
                instance=instance,
                files={"solution.py": "pass"},
                sha256="f" * 64,
                source_label="participant",
            )
            report = _report(template.slug, seed, passed, rng)
            evaluation = Evaluation(
                submission=submission, status="done", tests_total=15, tests_done=15, report=report
            )
            start = day + timedelta(days=period // 3, minutes=65 * ((period - 1) % 2))
            trials.append(
                Trial(
                    participant=p,
                    session_index=1 + (period > 2),
                    period=period,
                    arm=arms[SEQUENCES[i % 4][period - 1]],
                    template_slug=template.slug,
                    seed=seed,
                    instance=instance,
                    submission=submission,
                    evaluation=evaluation,
                    status="submitted",
                    started_at=start,
                    ended_at=start + timedelta(minutes=rng.randint(15, 60)),
                )
            )
            instances.append(instance)
            submissions.append(submission)
            evaluations.append(evaluation)
    # Parents first: bulk_create fills in the ids the children's foreign keys need.
    TaskInstance.objects.bulk_create(instances)
    Submission.objects.bulk_create(submissions)
    Evaluation.objects.bulk_create(evaluations)
    return Trial.objects.bulk_create(trials)


def _answers(study: Any, participants: list[Any], trials: list[Any], rng: random.Random) -> None:
    from ide_bridge.models import AIRequest
    from study.demo.answers import answers_for
    from study.models import Answer, Response

    versions = {"screening": study.screening, "post_trial": study.post_trial}
    versions["post_study"] = study.post_study
    items = {kind: list(v.items.all()) for kind, v in versions.items()}
    responses, answers = [], []
    for p in participants:
        sheets = [("screening", None), ("post_study", None)]
        sheets += [("post_trial", t) for t in trials if t.participant_id == p.pk]
        for kind, trial in sheets:
            when = datetime(2026, 3, 3, tzinfo=UTC)
            response = Response(
                participant=p, version=versions[kind], trial=trial, submitted_at=when
            )
            responses.append(response)
            values = answers_for(versions[kind], rng)
            answers += [Answer(response=response, item=i, value=values[i.key]) for i in items[kind]]
    Response.objects.bulk_create(responses)
    Answer.objects.bulk_create(answers, batch_size=2000)
    requests = [
        AIRequest(
            trial=t,
            kind=rng.choice(["chat", "complete"]),
            provider="demo",
            model="demo",
            messages=[{"role": "user", "content": "help"}],
            reply="def f(): ...",
            prompt_tokens=rng.randint(50, 900),
            completion_tokens=rng.randint(20, 400),
            latency_ms=rng.randint(100, 2000),
            outcome=rng.choice(["accepted", "rejected", "shown"]),
        )
        for t in trials
        if t.arm.condition == "B"
        for _ in range(20)
    ]
    AIRequest.objects.bulk_create(requests, batch_size=2000)


def build_study(n_participants: int, rng: random.Random) -> list[tuple[int, datetime, bool]]:
    """The study and its participants; returns (trial id, start, AI?) of every trial."""
    from django.db import transaction

    with transaction.atomic():
        study = _study()
        participants = _participants(study, n_participants, rng)
        trials = _trials(study, participants, rng)
        _answers(study, participants, trials, rng)
    return [(t.pk, t.started_at, t.arm.condition == "B") for t in trials]


MIX = {  # kind -> share of events (per 100) in a trial without and with the AI assistant
    "edit": (60, 60), "selection": (14, 14), "run_tests": (3, 3), "paste": (2, 2),
    "copy": (1, 1), "page_visibility": (2, 2), "idle": (2, 2), "checkpoint": (1, 1),
    "run_code": (2, 2), "editor_focus": (1, 1), "suggestion_shown": (0, 6),
    "suggestion_accept": (0, 2), "chat_user_message": (0, 1), "chat_assistant_response": (0, 1),
}  # fmt: skip


def _payload(kind: str, n: int) -> dict[str, Any]:
    payloads: dict[str, dict[str, Any]] = {
        "edit": {"changes": [{"rangeOffset": 7 * n, "rangeLength": n % 3, "text": f"x = {n}"}],
                 "versionId": n},
        "selection": {"offset": 11 * n, "length": n, "line": n, "column": n % 9},
        "run_tests": {"passed": n % 5, "failed": 5 - n % 5, "errors": 0, "total": 5,
                      "duration_ms": 31 * n},
        "paste": {"length": 9 * n, "lines": n % 6, "source": "editor", "offset": n},
        "copy": {"length": 4 * n, "source": "editor", "cut": False},
        "page_visibility": {"state": "visible", "hidden_ms": 300 * n},
        "idle": {"state": "end", "idle_ms": 1000 * n},
        "checkpoint": {"code": CODE * 20, "versionId": n, "reason": "interval"},
        "run_code": {"exit_status": 0, "output": f"ok {n}\n", "duration_ms": 20 * n},
        "editor_focus": {},
        "suggestion_shown": {"request_id": f"r-{n}", "length": 5 * n, "lines": n % 4,
                             "latency_ms": 12 * n},
        "suggestion_accept": {"request_id": f"r-{n}", "partial": False, "length": 5 * n},
        "chat_user_message": {"request_id": f"c-{n}", "length": 8 * n, "stage": "coding"},
        "chat_assistant_response": {"request_id": f"c-{n}", "length": 30 * n, "has_code": True,
                                    "latency_ms": 40 * n},
    }  # fmt: skip
    return payloads[kind]


def _payloads(rng: random.Random, ai: bool) -> list[tuple[str, str]]:
    """A pool of (kind, payload JSON) in the mix's proportions, drawn from at random."""
    return [
        (kind, json.dumps(_payload(kind, rng.randint(1, 40))))
        for kind, shares in MIX.items()
        for _ in range(5 * shares[ai])
    ]


def copy_events(trials: list[tuple[int, datetime, bool]], total: int, rng: random.Random) -> None:
    from django.db import connection

    per_trial = total // len(trials)
    extra = total - per_trial * len(trials)
    pools = {ai: _payloads(rng, ai) for ai in (False, True)}
    connection.ensure_connection()
    raw = connection.connection
    with (
        raw.cursor() as cursor,
        cursor.copy(
            "COPY ide_bridge_trialevent (trial_id, seq, kind, client_ts, server_ts, payload) "
            "FROM STDIN"
        ) as copy,
    ):
        for index, (trial_id, start, ai) in enumerate(trials):
            n = per_trial + (1 if index < extra else 0)
            start_ms = int(start.timestamp() * 1000)
            pool = pools[ai]
            lines = []
            for seq in range(1, n + 1):
                kind, payload = pool[rng.randrange(len(pool))]
                ts = start_ms + seq * 550
                received = datetime.fromtimestamp((ts + 45) / 1000, tz=UTC).isoformat()
                escaped = payload.replace("\\", "\\\\")
                lines.append(f"{trial_id}\t{seq}\t{kind}\t{ts}\t{received}\t{escaped}\n")
            copy.write("".join(lines))
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
