"""The Content-Security-Policy header of every response.

Django 5.2 has no CSP support of its own (it arrives in 6.0 as ``SECURE_CSP`` and
``ContentSecurityPolicyMiddleware``); this middleware reads a setting of the same name and shape
(directive -> list of sources), so moving to Django's own later is a change of one line.

The policy (``config/settings/base.py``) allows scripts from our own origin only: no inline
script, no ``eval`` (htmx runs with ``allowEval`` off, see ``templates/base.html``). Inline styles
are allowed, because Monaco and Plotly write them; Monaco's web workers may start from ``blob:``.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

HEADER = "Content-Security-Policy"


def policy_text(directives: dict[str, list[str]]) -> str:
    return "; ".join(
        " ".join([name, *sources]) for name, sources in directives.items() if sources is not None
    )


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.header = policy_text(settings.SECURE_CSP)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.header and HEADER not in response:
            response[HEADER] = self.header
        return response
