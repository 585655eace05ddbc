"""The study's own tables: participants, sessions and taskattempts (the primary analysis table).

``taskattempts`` is exactly the model frame of the pre-registered analysis (notes:
counterbalancing section 6): one row per trial with design variables (session, period,
position, condition, sequence, task, track, difficulty, time limit) and outcomes (time on task
with PAR, censoring, tests, overall and partial pass, grader version).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from study.exports import kanon
from study.exports.registry import (
    Column,
    ExportContext,
    Row,
    TableSpec,
    Withheld,
    flag,
    iso,
    register_table,
)
from study.exports.selection import STATUSES
from study.models import ConsentEvent, Participant, Trial

PID = Column(
    "participant_id",
    "string",
    "Pseudonymous participant id: HMAC-SHA256 of the internal id under the export key and "
    "scope (see manifest.json). The same person has the same id in every table of a package.",
    identifier_class="direct",
    deid_rule="hmac",
    source="Participant.internal_id",
)
NA_UNGRADED = "empty: the submission is not graded yet, or the trial has no submission"
FOREIGN = (("participant_id", "participants", "participant_id"),)


def _qi_column(ladder: kanon.Ladder, description: str) -> Column:
    return Column(
        ladder.name,
        "string",
        f"{description} Public packages: generalised for k-anonymity ('*' = any value, "
        f"'{kanon.SUPPRESSED}' = withheld for this participant; see deid_report.json).",
        allowed=" | ".join(ladder.allowed()),
        identifier_class="quasi",
        deid_rule=f"generalize:{ladder.name}",
        missing="empty: not answered",
        source=ladder.source,
    )


_QI_TEXT = {
    "age_band": "Age band (years).",
    "gender_cat": "Gender category.",
    "role_cat": "Main occupation (type, never an institution).",
    "experience_band": "Years of programming in any setting.",
    "ai_use_cat": "How often the participant used AI assistants for programming.",
}

PARTICIPANT_COLUMNS = (
    PID,
    Column("sequence", "string", "Condition sequence by period (e.g. ABBA).", source="Assignment.sequence"),  # noqa: E501
    Column("track", "string", "Task track.", allowed="SDE | MLE | DS", source="Participant.track"),
    Column("consent_version", "string", "Consent form version last agreed to.", source="ConsentEvent.form.version"),  # noqa: E501
    Column(
        "status",
        "string",
        "complete; session1_only (only session 1 done so far or at all); incomplete "
        "(started, not finished); withdrawn_data_retained (withdrew, study keeps data); "
        "excluded (excluded by the research team).",
        allowed=" | ".join(STATUSES),
        source="Participant.stage, Trial.status",
    ),
    Column("n_trials_closed", "integer", "Trials submitted or timed out.", source="Trial.status"),
    *(_qi_column(q, _QI_TEXT[q.name]) for q in kanon.SCREENING_QIS),
    Column(
        "internal_id",
        "string",
        "Random internal id (never derived from personal data); links to the vault on the "
        "server only.",
        identifier_class="direct",
        tier="internal",
        source="Participant.internal_id",
    ),
    Column(
        "username",
        "string",
        "Pseudonymous account name (p-adjective-noun-nnn), as shown in the administration.",
        identifier_class="direct",
        tier="internal",
        source="User.username",
    ),
    Column("enrolled_at_utc", "datetime", "Account creation (UTC).", identifier_class="quasi", tier="internal", source="Participant.created_at"),  # noqa: E501
    Column("exclusion_reason", "string", "Why the participant was excluded or withdrew.", identifier_class="free_text", tier="internal", missing="empty: none", source="Participant.exclusion_reason"),  # noqa: E501
)  # fmt: skip


def participant_rows(ctx: ExportContext) -> Iterator[Row]:
    pks = list(ctx.participants)
    closed: dict[int, int] = defaultdict(int)
    for pk, status in Trial.objects.filter(participant_id__in=pks).values_list(
        "participant_id", "status"
    ):
        closed[pk] += status in (Trial.Status.SUBMITTED, Trial.Status.EXPIRED)
    consent = dict(
        ConsentEvent.objects.filter(participant_id__in=pks, decision="agree")
        .order_by("decided_at", "pk")
        .values_list("participant_id", "form__version")
    )
    extra: dict[int, tuple[Any, str]] = {}
    if not ctx.public:
        extra = {
            pk: (created, reason)
            for pk, created, reason in Participant.objects.filter(pk__in=pks).values_list(
                "pk", "created_at", "exclusion_reason"
            )
        }
    for pk, ref in ctx.participants.items():
        qi = ctx.quasi.get(pk, {})
        created, reason = extra.get(pk, (None, ""))
        yield (
            ref.pseudonym,
            ref.sequence or None,
            ref.track or None,
            consent.get(pk),
            ref.status,
            closed[pk],
            *(qi.get(q.name) or None for q in kanon.SCREENING_QIS),
            ref.internal_id,
            ref.username,
            iso(created),
            reason or None,
        )


# --- sessions -----------------------------------------------------------------------------------
SESSION_COLUMNS = (
    PID,
    Column("session_index", "integer", "Session number (1-based).", source="Trial.session_index"),
    Column("n_trials", "integer", "Trials planned in the session.", source="Trial"),
    Column("n_trials_closed", "integer", "Trials submitted or timed out.", source="Trial.status"),
    Column("completed", "boolean", "Every trial of the session is closed.", allowed="true | false", source="Trial.status"),  # noqa: E501
    Column("gap_from_s1_h", "integer", "Hours from the start of session 1 to the start of this session, rounded.", units="h", missing="empty: not started", deid_rule="relative_time", source="Trial.started_at"),  # noqa: E501
    Column("duration_min", "integer", "Minutes from the first trial start to the last trial end, rounded.", units="min", missing="empty: no closed trial", deid_rule="relative_time", source="Trial.started_at, Trial.ended_at"),  # noqa: E501
    Column("environment", "string", "Work environment(s) of the session's trials, joined with '+'.", allowed="browser | codespaces | browser+codespaces", source="Arm.ide (snapshot)"),  # noqa: E501
    Column("started_at_utc", "datetime", "First trial start (UTC).", identifier_class="quasi", tier="internal", source="Trial.started_at"),  # noqa: E501
    Column("ended_at_utc", "datetime", "Last trial end (UTC).", identifier_class="quasi", tier="internal", source="Trial.ended_at"),  # noqa: E501
)  # fmt: skip


def session_rows(ctx: ExportContext) -> Iterator[Row]:
    status = dict(Trial.objects.filter(pk__in=list(ctx.trials)).values_list("pk", "status"))
    groups: dict[tuple[str, int], list[Any]] = defaultdict(list)
    for ref in ctx.trials.values():
        groups[(ref.participant.pseudonym, ref.session_index)].append(ref)
    first_start: dict[str, Any] = {}
    for (pid, index), refs in sorted(groups.items()):
        starts = [r.started_at for r in refs if r.started_at]
        closed = [r for r in refs if status[r.pk] in (Trial.Status.SUBMITTED, Trial.Status.EXPIRED)]
        ends = [r.ended_at for r in closed if r.ended_at]
        start = min(starts) if starts else None
        if index == 1 and start:
            first_start[pid] = start
        origin = first_start.get(pid)
        gap = round((start - origin).total_seconds() / 3600) if start and origin else None
        end = max(ends) if ends else None
        duration = round((end - start).total_seconds() / 60) if start and end else None
        yield (
            pid,
            index,
            len(refs),
            len(closed),
            flag(len(closed) == len(refs)),
            gap,
            duration,
            "+".join(sorted({r.ide for r in refs})),
            iso(start),
            iso(end),
        )


# --- taskattempts (primary) -----------------------------------------------------------------
ATTEMPT_COLUMNS = (
    PID,
    Column("session_index", "integer", "Session number (1-based).", source="Trial.session_index"),
    Column("period", "integer", "Position of the trial across the whole study (1-based).", source="Trial.period"),  # noqa: E501
    Column("pos_in_session", "integer", "Position of the trial within its session (1-based).", source="Trial.period"),  # noqa: E501
    Column("condition", "string", "Condition letter (A = no AI, B = AI in the default design).", source="Arm.condition"),  # noqa: E501
    Column("ai_mode", "string", "AI assistance of the condition.", allowed="none | inline | chat | inline_chat | feedback", source="Arm.ai_mode (snapshot)"),  # noqa: E501
    Column("sequence", "string", "The participant's condition sequence.", source="Assignment.sequence"),  # noqa: E501
    Column("task_id", "string", "Task template (slug in the task bank).", source="Trial.template_slug"),  # noqa: E501
    Column("template_version", "string", "Template version (semver).", source="TaskTemplate.version"),  # noqa: E501
    Column("track", "string", "Task track.", allowed="SDE | MLE | DS", source="TaskTemplate.track"),
    Column("difficulty", "string", "Template difficulty.", allowed="easy | medium | hard", source="TaskTemplate.difficulty"),  # noqa: E501
    Column("time_limit_s", "integer", "Time limit of the trial.", units="s", source="Arm.time_limit_min (snapshot)"),  # noqa: E501
    Column("status", "string", "Trial state.", allowed="pending | active | submitted | expired", source="Trial.status"),  # noqa: E501
    Column("submitted", "boolean", "The participant submitted before the limit.", allowed="true | false", source="Trial.status"),  # noqa: E501
    Column("censored", "boolean", "The trial did not end with a solution passing every check within the limit (survival models: censored at time_limit_s).", allowed="true | false", missing=NA_UNGRADED + "; or the trial is still open", source="Trial.status, Evaluation.report.overall_pass"),  # noqa: E501
    Column("time_on_task_s", "integer", "Penalised time (PAR): seconds to submission if every check passed, else the time limit.", units="s", missing=NA_UNGRADED + "; or the trial is still open", deid_rule="relative_time", source="Trial.started_at/ended_at, Evaluation.report"),  # noqa: E501
    Column("duration_s", "integer", "Seconds from trial start to submission or to the limit (not penalised).", units="s", missing="empty: the trial is still open or never started", deid_rule="relative_time", source="Trial.started_at/ended_at"),  # noqa: E501
    Column("grading_status", "string", "State of the hidden-test grading.", allowed="none | queued | running | done | failed", source="Evaluation.status"),  # noqa: E501
    Column("tests_passed", "integer", "Tests (visible and hidden, functional and performance) with verdict OK.", missing=NA_UNGRADED, source="Evaluation.report.tests"),  # noqa: E501
    Column("tests_total", "integer", "Tests run.", missing=NA_UNGRADED, source="Evaluation.report.tests"),  # noqa: E501
    Column("hidden_tests_passed", "integer", "Hidden tests with verdict OK.", missing=NA_UNGRADED, source="Evaluation.report.tests"),  # noqa: E501
    Column("hidden_tests_total", "integer", "Hidden tests run.", missing=NA_UNGRADED, source="Evaluation.report.tests"),  # noqa: E501
    Column("pass_all", "boolean", "Overall pass: every functional test and both efficiency checks pass.", allowed="true | false", missing=NA_UNGRADED, source="Evaluation.report.overall_pass"),  # noqa: E501
    Column("partial_pass", "number", "Share of checks passed (0-1).", allowed="0-1", missing=NA_UNGRADED, source="Evaluation.report.partial_pass"),  # noqa: E501
    Column("time_ok", "boolean", "Time-efficiency check passed.", allowed="true | false", missing=NA_UNGRADED, source="Evaluation.report.efficiency.time_ok"),  # noqa: E501
    Column("memory_ok", "boolean", "Memory-efficiency check passed.", allowed="true | false", missing=NA_UNGRADED + "; or the template has no memory check", source="Evaluation.report.efficiency.memory_ok"),  # noqa: E501
    Column("grader_version", "string", "Report schema and template version that graded the trial: report-<schema>;<slug>:<version>+<content hash prefix>.", missing=NA_UNGRADED, source="Evaluation.report.schema_version, template"),  # noqa: E501
    Column("trial_id", "integer", "Internal trial id (links to the replay).", identifier_class="direct", tier="internal", source="Trial.id"),  # noqa: E501
    Column("instance_seed", "integer", "Seed of the participant's task instance.", identifier_class="direct", tier="internal", source="Trial.seed"),  # noqa: E501
    Column("solution_sha256", "string", "sha256 of the graded solution.", identifier_class="direct", tier="internal", missing=NA_UNGRADED, source="Evaluation.report.solution_sha256"),  # noqa: E501
    Column("started_at_utc", "datetime", "Trial start (UTC).", identifier_class="quasi", tier="internal", source="Trial.started_at"),  # noqa: E501
    Column("ended_at_utc", "datetime", "Trial end (UTC).", identifier_class="quasi", tier="internal", source="Trial.ended_at"),  # noqa: E501
)  # fmt: skip


def _tests(report: dict[str, Any]) -> tuple[int, int, int, int]:
    tests = [t for t in report.get("tests") or [] if isinstance(t, dict)]
    hidden = [t for t in tests if not t.get("visible")]
    ok = sum(t.get("verdict") == "OK" for t in tests)
    hidden_ok = sum(t.get("verdict") == "OK" for t in hidden)
    return ok, len(tests), hidden_ok, len(hidden)


def _grader(report: dict[str, Any]) -> str | None:
    template = report.get("template") or {}
    if not report.get("schema_version") or not template:
        return None
    return (
        f"report-{report['schema_version']};{template.get('slug')}:{template.get('version')}"
        f"+{str(template.get('content_hash', ''))[:12]}"
    )


def attempt_rows(ctx: ExportContext) -> Iterator[Row]:
    trials = {
        t.pk: t
        for t in Trial.objects.filter(pk__in=list(ctx.trials))
        .select_related("evaluation", "instance__template")
        .only(
            "pk", "status", "template_slug", "seed", "evaluation__status", "evaluation__report",
            "instance__template__version", "instance__template__track",
            "instance__template__difficulty",
        )
    }  # fmt: skip
    position: dict[int, int] = {}
    counter: dict[tuple[int, int], int] = defaultdict(int)
    for ref in ctx.trials.values():
        counter[(ref.participant.pk, ref.session_index)] += 1
        position[ref.pk] = counter[(ref.participant.pk, ref.session_index)]
    for ref in ctx.trials.values():
        trial = trials[ref.pk]
        template = trial.instance.template
        evaluation = trial.evaluation
        report = evaluation.report if evaluation and evaluation.status == "done" else None
        report = report if isinstance(report, dict) else None
        limit = ref.time_limit_s
        closed = trial.status in (Trial.Status.SUBMITTED, Trial.Status.EXPIRED)
        expired = trial.status == Trial.Status.EXPIRED
        duration: int | None = None
        if expired:
            duration = limit
        elif closed and ref.started_at and ref.ended_at:
            duration = min(limit, round((ref.ended_at - ref.started_at).total_seconds()))
        pass_all = bool(report["overall_pass"]) if report else None
        censored: bool | None = True if expired else (None if pass_all is None else not pass_all)
        par = None if censored is None else (limit if censored else duration)
        tests = _tests(report) if report else (None, None, None, None)
        efficiency = (report or {}).get("efficiency") or {}
        partial = report.get("partial_pass") if report else None
        yield (
            ref.participant.pseudonym,
            ref.session_index,
            ref.period,
            position[ref.pk],
            ref.condition,
            ref.ai_mode,
            ref.participant.sequence or None,
            trial.template_slug,
            template.version,
            template.track,
            template.difficulty,
            limit,
            trial.status,
            flag(trial.status == Trial.Status.SUBMITTED),
            flag(censored),
            par,
            duration,
            evaluation.status if evaluation else "none",
            *tests,
            flag(pass_all),
            round(float(partial), 4) if isinstance(partial, int | float) else None,
            flag(efficiency.get("time_ok")) if report else None,
            flag(efficiency.get("memory_ok")) if report else None,
            _grader(report) if report else None,
            trial.pk,
            trial.seed,
            report.get("solution_sha256") if report else None,
            iso(ref.started_at),
            iso(ref.ended_at),
        )


def register_tables() -> None:
    """Register the participants, sessions and taskattempts tables (``StudyConfig.ready``)."""
    register_table(
        TableSpec(
            name="participants",
            title="Participants",
            description="One row per included participant: design, status and generalised "
            "background (quasi-identifiers).",
            columns=PARTICIPANT_COLUMNS,
            rows=participant_rows,
            order=10,
            primary_key=("participant_id",),
            withheld=(
                Withheld("vault: name, e-mail, institution, payment, external ids, typed consent names", "direct", "drop", "vault data never leaves the server"),  # noqa: E501
                Withheld("LoginLink.token_sha256 and login links", "direct", "drop", "credentials are never exported"),  # noqa: E501
                Withheld("User.username", "direct", "drop", "public: replaced by participant_id (internal tier only)"),  # noqa: E501
                Withheld("screening: education, field, professional_years, languages, work_areas, editors, ai_tools, ai_tasks", "quasi", "drop", "public: not in the released QI set (every extra QI coarsens the others)"),  # noqa: E501
                Withheld("Participant.created_at, ended_at, last_activity_at", "quasi", "relative_time", "public: absolute dates are dropped"),  # noqa: E501
                Withheld("Participant.exclusion_reason", "free_text", "drop", "public: free text"),
            ),
        )
    )  # fmt: skip
    register_table(
        TableSpec(
            name="sessions",
            title="Sessions",
            description="One row per participant and session.",
            columns=SESSION_COLUMNS,
            rows=session_rows,
            order=20,
            primary_key=("participant_id", "session_index"),
            foreign_keys=FOREIGN,
        )
    )
    register_table(
        TableSpec(
            name="taskattempts",
            title="Task attempts (primary analysis table)",
            description="One row per trial: the model frame of the pre-registered analysis "
            "(participant, task, period, session, condition, sequence, outcomes).",
            columns=ATTEMPT_COLUMNS,
            rows=attempt_rows,
            order=30,
            primary_key=("participant_id", "period"),
            foreign_keys=FOREIGN,
            withheld=(
                Withheld("Trial.draft_files, Submission.files", "free_text", "drop", "code (every editable file, drafts and submissions) is never in a package (tier 1 data stays on the server)"),  # noqa: E501
                Withheld("Trial.seed, solution sha256, trial id", "direct", "drop", "public: unique codes would link releases made under different scopes"),  # noqa: E501
                Withheld("Trial.started_at, ended_at, deadline", "quasi", "relative_time", "public: only durations are released"),  # noqa: E501
                Withheld("Evaluation.report.tests[].message, error", "none", "drop", "grader messages are not analysis variables"),  # noqa: E501
            ),
        )
    )  # fmt: skip
