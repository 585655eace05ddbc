"""The participant's path between tasks: the entry point, welcome, waiting, done, withdraw.

Every page asks ``routing.current_step`` where the participant belongs and redirects there if
it is not this page, so any page can be reloaded or bookmarked. GET only reads.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from study.access import get_participant
from study.audit.withdrawal import withdraw_participant
from study.journey.flow import Page
from study.journey.routing import ENDED_PAGES, current_step, redirect_unless, step_url
from study.journey.services import SessionNotOpen, start_session
from study.results.release import released_reports


@login_required(login_url="/")
def next_page(request: HttpRequest) -> HttpResponse:
    return redirect(step_url(current_step(get_participant(request.user))))


@login_required(login_url="/")
def welcome(request: HttpRequest) -> HttpResponse:
    participant = get_participant(request.user)
    if (response := redirect_unless(participant, Page.WELCOME)) is not None:
        return response
    return render(
        request, "study/welcome.html", {"participant": participant, "study": participant.study}
    )


@login_required(login_url="/")
@require_http_methods(["GET", "POST"])
def waiting(request: HttpRequest) -> HttpResponse:
    participant = get_participant(request.user)
    if (response := redirect_unless(participant, Page.WAITING, Page.SESSION_MISSED)) is not None:
        return response
    now = timezone.now()
    opens, closes = participant.next_session_opens_at, participant.next_session_closes_at
    state = "early" if opens and now < opens else ("missed" if closes and now > closes else "open")
    if request.method == "POST" and state == "open":
        try:
            start_session(participant, now)
        except SessionNotOpen:
            pass  # the window closed between the page and the click: the page says so
        else:
            return redirect("study:next")
    return render(
        request,
        "study/waiting.html",
        {
            "participant": participant,
            "state": state,
            "opens_at": opens,
            "closes_at": closes,
            "opens_iso": opens.isoformat() if opens else "",
            "now": now,
        },
    )


@login_required(login_url="/")
def done(request: HttpRequest) -> HttpResponse:
    participant = get_participant(request.user)
    step = current_step(participant)
    if step.page not in ENDED_PAGES:
        return redirect(step_url(step))
    return render(
        request,
        "study/done.html",
        {
            "participant": participant,
            "page": step.page,
            "reports": released_reports(participant, timezone.now()),
        },
    )


@login_required(login_url="/")
@require_http_methods(["GET", "POST"])
def withdraw(request: HttpRequest) -> HttpResponse:
    participant = get_participant(request.user)
    if not participant.is_active:
        return redirect("study:done")
    if request.method == "POST":
        withdraw_participant(participant, channel="participant button")
        return redirect("study:done")
    return render(request, "study/withdraw.html", {"participant": participant})
