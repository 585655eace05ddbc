"""Where a participant belongs now, as a URL: the state machine's page for them, resolved.

Reading only: nothing here changes a row, so every page can call it on GET. Overdue trials are
closed by the ``study.close_overdue_trials`` task and by the workspace's own POST at time-up;
sessions move on in the services that finish their last piece of work.
"""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone

from study.enrolment.consent import needs_consent
from study.journey.flow import Page, Step, next_step
from study.models import Participant, Trial

PAGE_URLS = {
    Page.WELCOME: "study:welcome",
    Page.CONSENT: "study:consent",
    Page.SCREENING: "study:screening",
    Page.WAITING: "study:waiting",
    Page.SESSION_MISSED: "study:waiting",
    Page.POST_STUDY: "study:post_study",
    Page.COMPLETE: "study:done",
    Page.DECLINED: "study:done",
    Page.WITHDRAWN: "study:done",
    Page.EXCLUDED: "study:done",
}
ENDED_PAGES = (Page.COMPLETE, Page.DECLINED, Page.WITHDRAWN, Page.EXCLUDED)


def current_step(participant: Participant) -> Step:
    consent_due = participant.stage != Participant.Stage.INVITED and needs_consent(participant)
    return next_step(participant, timezone.now(), needs_consent=consent_due)


def step_url(step: Step) -> str:
    if step.page == Page.TRIAL and step.trial is not None:
        return trial_url(step.trial)
    if step.page == Page.POST_TRIAL and step.trial is not None:
        return reverse("study:post_trial", args=[step.trial.pk])
    return reverse(PAGE_URLS[step.page])


def trial_url(trial: Trial) -> str:
    """The trial's workspace in the IDE bridge (resolved by URL name: this app never imports
    ``ide_bridge``). The workspace itself offers the start of a pending trial."""
    return reverse("ide_bridge:workspace", args=[trial.pk])


def is_current_trial(step: Step, trial: Trial) -> bool:
    return step.page == Page.TRIAL and step.trial is not None and step.trial.pk == trial.pk


def redirect_unless(participant: Participant, *pages: Page) -> HttpResponse | None:
    """None when the participant belongs on one of ``pages``; else a redirect to where they
    belong."""
    step = current_step(participant)
    if step.page in pages:
        return None
    return redirect(step_url(step))
