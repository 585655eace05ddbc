"""Routes of the evaluation engine (researcher-facing pages come with the engine)."""

from __future__ import annotations

from django.urls import URLPattern

app_name = "evaluation"

urlpatterns: list[URLPattern] = []
