"""Checks of a study's configuration before recruitment opens, in words a researcher can act on."""

from __future__ import annotations

from collections import Counter

from evaluation.bank import BankError, load_template
from evaluation.llm.validation import statuses
from study.models import Study

VALIDATE = "manage.py validate_templates --baseline ENDPOINT --models E1,E2 --templates {slug}"


def configuration_problems(study: Study) -> list[str]:

    problems: list[str] = []
    tracks = list(study.tracks.all())
    arms = list(study.arms.all())
    if not tracks:
        problems.append("Add at least one track (SDE, MLE or DS).")
    letters = sorted(a.condition for a in arms)
    if len(arms) < 2:
        problems.append("Add two arms: condition A (no AI) and condition B (an AI mode).")
    elif study.trials_per_session % len(arms):
        problems.append(
            f"Each session must hold every condition equally often: {study.trials_per_session} "
            f"trials per session cannot be split over {len(arms)} arms ({', '.join(letters)})."
        )
    by_letter = {a.condition: a for a in arms}
    if "A" in by_letter and by_letter["A"].has_ai:
        problems.append("Arm A is the no-AI condition: set its AI mode to 'No AI'.")
    if "B" in by_letter and not by_letter["B"].has_ai:
        problems.append("Arm B is the AI condition: give it an AI mode other than 'No AI'.")
    for arm in arms:
        problems.extend(
            f"Arm {arm.condition}: {problem}"
            for problem in arm.channel_problems() + arm.endpoint_problems()
        )
    needed = study.total_trials
    active = Counter(e.track_id for e in study.pool.filter(active=True))
    for track in tracks:
        if active[track.pk] < needed:
            problems.append(
                f"The {track.code} task pool has {active[track.pk]} active task(s), but each "
                f"participant needs {needed} different tasks ({study.sessions} sessions x "
                f"{study.trials_per_session} trials)."
            )
    own = [t for t in tracks if t.target_participants is not None]
    if sum(t.target_participants or 0 for t in own) > study.target_participants:
        listed = ", ".join(f"{t.code} {t.target_participants}" for t in own)
        problems.append(
            f"The tracks' own targets ({listed}) add up to more than the study's target of "
            f"{study.target_participants}: lower them or raise the study's target."
        )
    problems.extend(pool_problems(study))
    for field, label in (
        ("consent_form", "a consent form"),
        ("screening", "a screening questionnaire"),
        ("post_trial", "a post-trial questionnaire"),
        ("post_study", "a post-study questionnaire"),
    ):
        if getattr(study, f"{field}_id") is None:
            problems.append(f"Choose {label}.")
    if study.window_hours >= study.gap_hours and study.sessions > 1:
        problems.append("The session window must be shorter than the gap between sessions.")
    return problems


def cross_track_problem(slug: str, template_track: str, pool_track: str) -> str:
    return (
        f"Template {slug} belongs to the {template_track} track, but it is in the {pool_track} "
        f"pool: move it to the {template_track} pool, or tick cross-track on the entry to use "
        "it here anyway."
    )


def cross_track_warnings(study: Study) -> list[str]:
    """The study page's warning for each entry allowed into another track's pool."""
    warnings = []
    for entry in study.pool.filter(cross_track=True).select_related("track"):
        try:
            track = load_template(entry.template_slug).track
        except BankError:
            continue
        if track != entry.track.code:
            warnings.append(
                f"The {entry.track.code} pool holds {entry.template_slug} from the {track} "
                "track (cross-track): its participants get a task written for another track."
            )
    return warnings


def pool_problems(study: Study) -> list[str]:
    """Pool entries that are not in the bank, and active ones that are retired or whose current
    version has not passed validation (retired and unvalidated ones are allowed only when the
    study allows unvalidated templates, i.e. pilots; rejected and compromised ones never are)."""
    problems: list[str] = []
    versions: dict[str, str] = {}
    retired: dict[str, str] = {}
    for entry in study.pool.select_related("track").order_by("template_slug", "track__code"):
        try:
            spec = load_template(entry.template_slug)
        except BankError as exc:
            problems.append(f"Pool entry {entry.template_slug}: {exc}")
            continue
        if spec.track != entry.track.code and not entry.cross_track:
            problems.append(cross_track_problem(spec.slug, spec.track, entry.track.code))
        versions.setdefault(spec.slug, spec.version)
        if spec.retired:
            retired[spec.slug] = spec.retired_on
    active = {
        slug for slug in study.pool.filter(active=True).values_list("template_slug", flat=True)
    }
    if not study.allow_unvalidated_templates:
        problems.extend(
            f"Template {slug} was retired from the bank on {on}: take it out of the pool."
            for slug, on in sorted(retired.items())
            if slug in active
        )
    found = statuses((slug, version) for slug, version in versions.items() if slug in active)
    for (slug, version), status in sorted(found.items()):
        if status == "accepted" or (status == "unvalidated" and study.allow_unvalidated_templates):
            continue
        if status == "unvalidated":
            problems.append(
                f"Template {slug} {version} has not been validated: run "
                f"{VALIDATE.format(slug=slug)}, or allow unvalidated templates (pilots only)."
            )
        else:
            problems.append(
                f"Template {slug} {version} is {status} (LLMs solve it too often) and cannot be "
                "used: take it out of the pool or replace it with a revised version."
            )
    return problems
