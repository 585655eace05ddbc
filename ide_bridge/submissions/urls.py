"""``/ide/submissions/<trial>``: a workspace archive submitted from outside the browser."""

from __future__ import annotations

from django.urls import path

from ide_bridge.submissions import views

urlpatterns = [
    path("<int:trial_id>", views.submission, name="submission"),
]
