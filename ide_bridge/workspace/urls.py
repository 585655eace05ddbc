"""``/ide/workspace/<trial>/``: the browser workspace and its JSON endpoints."""

from __future__ import annotations

from django.urls import path

from ide_bridge.workspace import views

urlpatterns = [
    path("<int:trial_id>/", views.workspace_page, name="workspace"),
    path("<int:trial_id>/start", views.start, name="start"),
    path("<int:trial_id>/autosave", views.autosave, name="autosave"),
    path("<int:trial_id>/run", views.run_tests, name="run"),
    path("<int:trial_id>/submit", views.submit, name="submit"),
    path("<int:trial_id>/state", views.state, name="state"),
    path("<int:trial_id>/close", views.close, name="close"),
    path("<int:trial_id>/images/<path:path>", views.image, name="workspace_image"),
]
