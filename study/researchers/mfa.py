"""Two-factor authentication for staff sessions.

Staff sign in only through allauth (``config/urls.py`` sends ``/admin/login/`` there), whose login
asks for the TOTP code of an account that has one. This middleware is the second line: it checks
every request of a staff session.

- A staff account with TOTP whose session has no completed MFA step (a session made by a password
  alone, whatever created it) is signed out and sent to the login page. Setting TOTP up counts as
  a completed step (the set-up form checks a code), so the researcher stays signed in.
- With ``HAIEVAL_REQUIRE_MFA`` on (production's default), a staff account without TOTP is sent to
  set it up before it reaches anything but the account pages (``/accounts/``: two-factor set-up,
  re-authentication, sign-out).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from allauth.account.authentication import get_authentication_records
from allauth.mfa.models import Authenticator
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse

SIGN_IN_AGAIN = "Sign in again with your authentication code."
SET_UP_FIRST = "Researchers need two-factor authentication: set up an authenticator app first."

# Pages a staff account without TOTP may still open while set-up is required.
SET_UP_PREFIXES = ("/accounts/", "/static/", "/healthz/")
# The session key naming the account that set TOTP up in this session.
SET_UP_IN_SESSION = "haieval_totp_set_up_by"


def has_totp(user: object) -> bool:
    return Authenticator.objects.filter(user=user, type=Authenticator.Type.TOTP).exists()


def mfa_completed(request: HttpRequest) -> bool:
    """Whether this session's sign-in included a second factor (allauth records each step), or
    the account set its authenticator up in this session."""
    if request.session.get(SET_UP_IN_SESSION) == str(request.user.pk):
        return True
    records = get_authentication_records(request, request.user)
    return any(record.get("method") == "mfa" for record in records)


def remember_set_up(sender: Any, request: HttpRequest, user: Any, **kwargs: Any) -> None:
    """allauth's ``authenticator_added`` receiver (connected in ``StudyConfig.ready``)."""
    authenticator = kwargs.get("authenticator")
    is_totp = authenticator is not None and authenticator.type == Authenticator.Type.TOTP
    if is_totp and request is not None and user is not None:
        request.session[SET_UP_IN_SESSION] = str(user.pk)


class StaffMFAMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = request.user
        if user.is_authenticated and user.is_staff and not request.path.startswith("/static/"):
            if has_totp(user):
                if not mfa_completed(request):
                    logout(request)
                    messages.warning(request, SIGN_IN_AGAIN)
                    return redirect_to_login(request.get_full_path())
            elif settings.HAIEVAL_REQUIRE_MFA and not request.path.startswith(SET_UP_PREFIXES):
                messages.info(request, SET_UP_FIRST)
                return HttpResponseRedirect(reverse("mfa_activate_totp"))
        return self.get_response(request)
