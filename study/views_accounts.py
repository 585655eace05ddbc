"""Participant sign-in pages: the personal login link and the public recruitment link.

Both show a confirmation page on GET and act only on POST, so e-mail link scanners and
previewers (which fetch with GET) cannot use a one-time link up. POSTs are rate-limited per
client address (``STUDY_LINK_POSTS_PER_MINUTE``, default 20; a hashed address is the cache key).
"""

from __future__ import annotations

import hashlib
import time

from django.conf import settings
from django.contrib.auth import login
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_http_methods

from study.accounts import (
    JoinRefused,
    LinkInvalid,
    check_login_link,
    check_recruiting,
    clean_external_id,
    join_via_recruitment,
    redeem_login_link,
    study_for_recruitment_token,
)
from study.models import Participant

MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
DEFAULT_POSTS_PER_MINUTE = 20


def _client_key(request: HttpRequest) -> str:
    # Behind the proxy the last X-Forwarded-For hop is the address the proxy saw.
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    address = forwarded.split(",")[-1].strip() if forwarded else request.META.get("REMOTE_ADDR", "")
    return hashlib.sha256(f"{settings.SECRET_KEY}:{address}".encode()).hexdigest()[:32]


def _rate_limited(request: HttpRequest) -> bool:
    limit = getattr(settings, "STUDY_LINK_POSTS_PER_MINUTE", DEFAULT_POSTS_PER_MINUTE)
    key = f"study-link-posts:{_client_key(request)}:{int(time.time() // 60)}"
    cache.add(key, 0, timeout=120)
    try:
        count = cache.incr(key)
    except ValueError:  # evicted between add and incr
        cache.set(key, 1, timeout=120)
        count = 1
    return count > limit


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


def _next_url() -> str:
    try:
        return reverse("study:next")
    except NoReverseMatch:  # the participant journey is not wired in (yet)
        return "/study/"


def _sign_in(request: HttpRequest, participant: Participant) -> HttpResponse:
    login(request, participant.user, backend=MODEL_BACKEND)
    return redirect(_next_url())


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
            return redirect(_next_url())  # already signed in with this link: carry on
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
        return redirect(_next_url())
    try:
        account = join_via_recruitment(study, recruitment_token, external_id)
        participant = redeem_login_link(account.token)
    except JoinRefused as exc:
        return _problem(request, str(exc), exc.status, "This study link does not work")
    except LinkInvalid as exc:
        return _problem(request, str(exc), exc.status, _LINK_TITLES[exc.reason])
    return _sign_in(request, participant)
