"""The project's URLs with the export routes in the ``study`` namespace, for tests written
before ``study/urls.py`` includes ``study.urls_exports`` (harmless once it does)."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, include, path

from config.urls import urlpatterns as project
from study import urls as study_urls
from study.urls_exports import urlpatterns as export_patterns

_study = ([*export_patterns, *study_urls.urlpatterns], "study")
urlpatterns: list[URLPattern | URLResolver] = [
    *(p for p in project if str(p.pattern) != "study/"),
    path("study/", include(_study)),
]
