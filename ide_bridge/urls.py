"""HTTP routes of the participant's coding environment."""

from __future__ import annotations

from django.urls import URLPattern

app_name = "ide_bridge"

urlpatterns: list[URLPattern] = []
