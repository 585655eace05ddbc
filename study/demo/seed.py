"""Demo data for a newcomer's first run (``manage.py seed_demo``).

Everything is created through the real services, so the demo exercises the same code paths as a
real study: consent, screening, counterbalanced assignment, trials, grading and questionnaires.
Re-running is safe: existing demo participants are kept and get fresh one-time login links.
"""

from __future__ import annotations

import os
import random
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from evaluation.bank import list_templates
from evaluation.instances import get_instance
from evaluation.submissions import reference_files
from study.demo.answers import answers_for
from study.enrolment.accounts import issue_login_link
from study.enrolment.services import give_consent, submit_screening
from study.journey.flow import Stage
from study.journey.services import start_session
from study.models import Arm, Participant, Study, TaskPoolEntry, Track, Trial, User
from study.questionnaires.instruments import attach_default_instruments
from study.questionnaires.services import submit_post_study, submit_post_trial
from study.researchers.roles import sync_researcher_group
from study.trials.services import start_trial, submit_trial
from study.vault.services import store_contact

DEMO_ADMIN_EMAIL = "admin@example.org"
DEMO_SLUG = "demo"
# username -> how far along the journey the demo participant is
DEMO_STAGES = (
    ("demo-invited", "invited"),
    ("demo-consented", "consented"),
    ("demo-ai-trial", "ai_trial"),
    ("demo-noai-trial", "noai_trial"),
    ("demo-waiting", "waiting"),
)
CONTACTS = (
    ("Alex Moreau", "Université de Lyon"),
    ("Priya Raman", "Northbridge Analytics"),
    ("Tomás Ortega", "Universidad de Sevilla"),
    ("Mei Chen", "Harbor Robotics"),
    ("Jonas Becker", "TU Freiburg"),
    ("Amara Okafor", "Lagos Data Lab"),
    ("Sofia Lindqvist", "Uppsala University"),
    ("Daniel Kim", "Riverstone Software"),
)


def base_url() -> str:
    return os.environ.get("HAIEVAL_BASE_URL", "http://127.0.0.1:8000").rstrip("/")


def ensure_admin(password: str) -> User:
    admin = User.objects.filter(username=DEMO_ADMIN_EMAIL).first()
    if admin is None:
        admin = User(username=DEMO_ADMIN_EMAIL, email=DEMO_ADMIN_EMAIL)
        admin.is_staff = admin.is_superuser = True
        admin.set_password(password)
        admin.save()
    else:
        admin.is_staff = admin.is_superuser = admin.is_active = True
        admin.set_password(password)
        admin.save(update_fields=["is_staff", "is_superuser", "is_active", "password"])
    admin.groups.add(sync_researcher_group())
    return admin


@transaction.atomic
def ensure_study(admin: User) -> Study:

    study, created = Study.objects.get_or_create(
        slug=DEMO_SLUG,
        defaults={
            "title": "Demo study: programming with and without an AI assistant",
            "description": "A demonstration of the HAI-Eval platform. Nothing you do here is "
            "used for research.",
            "status": Study.Status.RECRUITING,
            "contact": "the platform administrator (admin@example.org)",
            "report_release": Study.ReleasePolicy.IMMEDIATELY,
            "recruitment_token": "demo-recruitment",
            # A demonstration is a pilot: its templates need not have been validated.
            "allow_unvalidated_templates": True,
        },
    )
    study.researchers.add(admin)
    if created:
        for code in (Track.Code.SDE, Track.Code.MLE, Track.Code.DS):
            Track.objects.create(study=study, code=code)
        Arm.objects.create(study=study, condition="A", name="Human only", ai_mode=Arm.AIMode.NONE)
        Arm.objects.create(
            study=study,
            condition="B",
            name="With the AI assistant",
            ai_mode=Arm.AIMode.INLINE_CHAT,
        )
        # Each track's pool holds its own active templates; a track with fewer than a
        # participant's tasks is topped up with its retired ones (a demo is a pilot).
        templates = sorted(list_templates(retired=True), key=lambda t: (bool(t.retired), t.slug))
        for track in study.tracks.all():
            mine = [t for t in templates if t.track == track.code]
            active = [t for t in mine if not t.retired]
            chosen = active if len(active) >= study.total_trials else mine[: study.total_trials]
            for template in chosen:
                TaskPoolEntry.objects.create(
                    study=study,
                    track=track,
                    template_slug=template.slug,
                    difficulty=template.difficulty,
                )
    attach_default_instruments(study)
    return study


def demo_participant(study: Study, username: str) -> tuple[Participant, bool]:
    existing = Participant.objects.filter(user__username=username).first()
    if existing is not None:
        return existing, False
    user = User(username=username)
    user.set_unusable_password()
    user.save()
    participant = Participant.objects.create(
        study=study, user=user, internal_id=secrets.token_hex(8)
    )
    return participant, True


def add_contact(participant: Participant, rng: random.Random) -> None:

    name, institution = rng.choice(CONTACTS)
    handle = name.lower().replace(" ", ".").replace("á", "a")
    store_contact(
        participant.internal_id,
        participant.study.slug,
        name=name,
        email=f"{handle}{rng.randint(1, 99)}@example.org",
        institution=institution,
        payment_notes=f"voucher, {rng.choice(['EUR', 'USD', 'GBP'])} 40 per completed session",
    )


def consent_and_screen(participant: Participant, rng: random.Random) -> None:
    form = participant.study.consent_form
    assert form is not None
    ticks = {box["id"]: True for box in form.checkboxes}
    give_consent(participant, agree=True, checkboxes=ticks)
    participant.refresh_from_db()
    screening = participant.study.screening
    assert screening is not None
    submit_screening(participant, answers_for(screening, rng))
    participant.refresh_from_db()


def solution_for(trial: Trial, kind: str) -> dict[str, str]:
    """The editable files a demo participant submits: the starter, or a stored reference."""
    instance = get_instance(trial.template_slug, trial.seed)
    if kind == "starter":
        return instance.starter_files()
    return reference_files(instance, kind)


def do_trial(
    participant: Participant, trial: Trial, start: datetime, kind: str, rng: random.Random
) -> datetime:
    """Start, submit and answer the post-trial questionnaire; returns when it ended."""
    trial = start_trial(trial, start)
    end = start + timedelta(minutes=rng.randint(18, 55))
    submit_trial(trial, solution_for(trial, kind), end, channel=Arm.Channel.EDITOR)
    post_trial = participant.study.post_trial
    assert post_trial is not None
    submit_post_trial(participant, trial, answers_for(post_trial, rng))
    return end


def run_session(
    participant: Participant, start: datetime, rng: random.Random, kinds: tuple[str, ...]
) -> datetime:
    participant.refresh_from_db()
    trials = list(
        participant.trials.filter(session_index=participant.session_index or 1).order_by("period")
    )
    moment = start
    for trial, kind in zip(trials, kinds, strict=False):
        moment = do_trial(participant, trial, moment, kind, rng) + timedelta(minutes=3)
        participant.refresh_from_db()
    return moment


def current_trial(participant: Participant) -> Trial | None:
    return (
        participant.trials.filter(
            session_index=participant.session_index or 1,
            status__in=[Trial.Status.PENDING, Trial.Status.ACTIVE],
        )
        .order_by("period")
        .first()
    )


def bring_to_trial_with(participant: Participant, ai: bool, rng: random.Random) -> None:
    """Leave the participant in session 1 with an open trial of the wanted condition."""
    now = timezone.now()
    trial = current_trial(participant)
    while trial is not None and trial.arm.has_ai != ai:
        do_trial(participant, trial, now - timedelta(hours=1), "starter", rng)
        participant.refresh_from_db()
        trial = current_trial(participant)
    if trial is not None:
        start_trial(trial, now)


def complete_participant(participant: Participant, rng: random.Random) -> None:
    """The whole journey, session 1 two days ago and session 2 a day later."""
    kinds = ("efficient", "naive", "starter")
    consent_and_screen(participant, rng)
    start = timezone.now() - timedelta(days=2, hours=rng.randint(0, 6))
    run_session(participant, start, rng, tuple(rng.choice(kinds) for _ in range(2)))
    participant.refresh_from_db()
    opens = participant.next_session_opens_at
    assert opens is not None
    second = opens + timedelta(hours=1)
    start_session(participant, second)
    run_session(
        participant, second + timedelta(minutes=2), rng, tuple(rng.choice(kinds) for _ in range(2))
    )
    participant.refresh_from_db()
    post_study = participant.study.post_study
    assert post_study is not None
    submit_post_study(participant, answers_for(post_study, rng))


def advance(participant: Participant, target: str, rng: random.Random) -> None:
    if target == "invited":
        return
    consent_form = participant.study.consent_form
    assert consent_form is not None
    if target == "consented":
        give_consent(
            participant, agree=True, checkboxes={b["id"]: True for b in consent_form.checkboxes}
        )
        return
    consent_and_screen(participant, rng)
    if target == "ai_trial":
        bring_to_trial_with(participant, True, rng)
    elif target == "noai_trial":
        bring_to_trial_with(participant, False, rng)
    elif target == "waiting":
        run_session(participant, timezone.now() - timedelta(hours=3), rng, ("efficient", "naive"))


def seed_demo(*, admin_password: str, completed: int = 0) -> dict[str, Any]:
    """Create or refresh the demo study and participants; return a JSON-ready summary."""
    admin = ensure_admin(admin_password)
    study = ensure_study(admin)
    rng = random.Random(20261130)
    for username, target in DEMO_STAGES:
        participant, created = demo_participant(study, username)
        if created:
            add_contact(participant, rng)
            advance(participant, target, rng)
    existing = Participant.objects.filter(study=study, user__username__startswith="demo-done-")
    for index in range(existing.count() + 1, completed + 1):
        participant, created = demo_participant(study, f"demo-done-{index:02d}")
        if created:
            add_contact(participant, rng)
            complete_participant(participant, rng)
    return summary(study)


def summary(study: Study) -> dict[str, Any]:
    rows = []
    for participant in study.participants.select_related("user").order_by("created_at"):
        participant.refresh_from_db()
        login = issue_login_link(participant) if participant.stage != Stage.WITHDRAWN else ""
        trials = [
            {
                "id": t.pk,
                "condition": t.arm.condition,
                "ai_mode": t.arm.ai_mode,
                "period": t.period,
                "status": t.status,
                "url": f"{base_url()}/study/trials/{t.pk}/",
            }
            for t in participant.trials.select_related("arm").order_by("period")
        ]
        rows.append(
            {
                "username": participant.user.username,
                "login_url": base_url() + login if login else "",
                "stage": participant.stage,
                "trials": trials,
            }
        )
    return {
        "study": study.slug,
        "admin": {"email": DEMO_ADMIN_EMAIL, "login_url": f"{base_url()}/admin/"},
        "participants": rows,
    }
