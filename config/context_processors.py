"""Template context shared by every page."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest


def platform(request: HttpRequest) -> dict[str, str]:
    return {"platform_name": "HAI-Eval", "platform_version": settings.APP_VERSION}
