"""Enrolment pages: the personal login link, the public recruitment link and consent.

The link pages show a confirmation on GET and act only on POST, so e-mail link scanners and
previewers (which fetch with GET) cannot use a one-time link up. Their POSTs are rate-limited
per client address by allauth's rate limiter (action ``study_link`` in ``ACCOUNT_RATE_LIMITS``,
``STUDY_LINK_POSTS_PER_MINUTE`` per minute). The address is the
``ALLAUTH_TRUSTED_PROXY_COUNT``-th ``X-Forwarded-For`` hop from the right, or ``REMOTE_ADDR``
with the default count 0, so a client cannot pick its own address by sending the header. The
accounts a recruitment link creates are limited per study as well (action ``study_join``,
``STUDY_JOINS_PER_HOUR``), whatever addresses they come from; returning participants are not
counted.
"""

from __future__ import annotations

from allauth.core import ratelimit
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from study.access import get_participant
from study.enrolment.accounts import (
    JoinRefused,
    LinkInvalid,
    check_login_link,
    check_recruiting,
    clean_external_id,
    join_via_recruitment,
    redeem_login_link,
    study_for_recruitment_token,
)
from study.enrolment.consent import render_consent
from study.enrolment.forms import ConsentDecisionForm
from study.enrolment.services import give_consent
from study.journey.flow import Page
from study.journey.routing import redirect_unless
from study.models import Participant

MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"


def _rate_limited(request: HttpRequest) -> bool:
    return not ratelimit.consume(request, action="study_link")


def _private(response: HttpResponse) -> HttpResponse:
    """Pages reached through a secret link: neither cached nor indexed.

    The site-wide ``same-origin`` referrer policy already keeps the token in the URL from
    leaking to other sites; ``no-referrer`` here would make browsers send ``Origin: null`` with
    the form and fail Django's CSRF check over HTTPS.
    """
    response["Cache-Control"] = "no-store"
    response["X-Robots-Tag"] = "noindex, nofollow"
    return response


def _problem(request: HttpRequest, message: str, status: int, title: str) -> HttpResponse:
    context = {"title": title, "message": message}
    return _private(render(request, "study/accounts/link_problem.html", context, status=status))


def _too_many(request: HttpRequest) -> HttpResponse:
    response = _problem(
        request,
        "Too many attempts from your network in the last minute. Please wait a minute and try "
        "again.",
        429,
        "Please wait a moment",
    )
    response["Retry-After"] = "60"
    return response


def _sign_in(request: HttpRequest, participant: Participant) -> HttpResponse:
    login(request, participant.user, backend=MODEL_BACKEND)
    return redirect("study:next")


_LINK_TITLES = {
    LinkInvalid.Reason.UNKNOWN: "Unknown login link",
    LinkInvalid.Reason.EXPIRED: "This login link has expired",
    LinkInvalid.Reason.USED: "This login link was already used",
    LinkInvalid.Reason.WITHDRAWN: "This account has left the study",
}


@require_http_methods(["GET", "HEAD", "POST"])
def login_link_confirm(request: HttpRequest, token: str) -> HttpResponse:
    """GET: confirm page (the link stays unused). POST: use the link up and sign in."""
    posting = request.method == "POST"
    if posting and _rate_limited(request):
        return _too_many(request)
    try:
        participant = redeem_login_link(token) if posting else check_login_link(token)
    except LinkInvalid as exc:
        same_person = (
            exc.participant is not None
            and request.user.is_authenticated
            and exc.participant.user_id == request.user.pk
        )
        if exc.reason == LinkInvalid.Reason.USED and same_person:
            return redirect("study:next")  # already signed in with this link: carry on
        return _problem(request, str(exc), exc.status, _LINK_TITLES[exc.reason])
    if posting:
        return _sign_in(request, participant)
    return _private(render(request, "study/accounts/confirm.html", {"study": participant.study}))


@require_http_methods(["GET", "HEAD", "POST"])
def join(request: HttpRequest, recruitment_token: str) -> HttpResponse:
    """The public recruitment link: confirm page on GET, account creation and sign-in on POST."""
    study = study_for_recruitment_token(recruitment_token)
    if study is None:
        return _problem(request, "We do not know this study link.", 404, "Unknown study link")
    posting = request.method == "POST"
    param = study.recruitment_id_param
    raw_external_id = (request.POST.get("external_id") if posting else None) or (
        request.GET.get(param) if param else None
    )
    try:
        check_recruiting(study, recruitment_token)
        external_id = clean_external_id(raw_external_id)
    except JoinRefused as exc:
        return _problem(request, str(exc), exc.status, "This study link does not work")
    if not posting:
        context = {"study": study, "external_id": external_id, "param": param}
        return _private(render(request, "study/accounts/join.html", context))
    if _rate_limited(request):
        return _too_many(request)
    # A double click or the back button must not create a second account.
    if (
        external_id is None
        and request.user.is_authenticated
        and Participant.objects.filter(user_id=request.user.pk, study=study).exists()
    ):
        return redirect("study:next")
    try:
        account = join_via_recruitment(
            study,
            recruitment_token,
            external_id,
            admit=lambda: ratelimit.consume(request, action="study_join", key=f"study:{study.pk}"),
        )
        participant = redeem_login_link(account.token)
    except JoinRefused as exc:
        if exc.status == 429:
            response = _problem(request, str(exc), 429, "Please try again later")
            response["Retry-After"] = "3600"
            return response
        return _problem(request, str(exc), exc.status, "This study link does not work")
    except LinkInvalid as exc:
        return _problem(request, str(exc), exc.status, _LINK_TITLES[exc.reason])
    return _sign_in(request, participant)


@login_required(login_url="/")
@require_http_methods(["GET", "POST"])
def consent(request: HttpRequest) -> HttpResponse:
    participant = get_participant(request.user)
    if (response := redirect_unless(participant, Page.WELCOME, Page.CONSENT)) is not None:
        return response
    form_version = participant.study.consent_form
    if form_version is None:
        raise Http404("this study has no consent form yet")
    form = ConsentDecisionForm(form_version, request.POST or None)
    if request.method == "POST":
        agree = request.POST.get("decision") == "agree"
        if not agree or form.is_valid():
            data = form.cleaned_data if agree else {}
            try:
                give_consent(
                    participant,
                    agree=agree,
                    checkboxes={k[3:]: bool(v) for k, v in data.items() if k.startswith("cb_")},
                    typed_name=data.get("typed_name"),
                )
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                return redirect("study:next")
    return render(
        request,
        "study/consent.html",
        {
            "form": form,
            "consent_form": form_version,
            "consent_html": render_consent(form_version),
            "action_url": reverse("study:consent"),
            "step_title": "Consent",
        },
    )
