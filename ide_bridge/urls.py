"""HTTP routes of the participant's coding environment (namespace ``ide_bridge``)."""

from __future__ import annotations

from django.urls import path

from ide_bridge import views

app_name = "ide_bridge"

urlpatterns = [
    path("trials/<int:trial_id>/", views.workspace_page, name="workspace"),
    path("trials/<int:trial_id>/autosave", views.autosave, name="autosave"),
    path("trials/<int:trial_id>/run", views.run_tests, name="run"),
    path("trials/<int:trial_id>/submit", views.submit, name="submit"),
    path("trials/<int:trial_id>/state", views.state, name="state"),
]

# Routes owned by the gateway, telemetry/replay and archive-submission modules.
from ide_bridge import urls_ai, urls_submissions, urls_telemetry  # noqa: E402

urlpatterns += urls_ai.urlpatterns + urls_telemetry.urlpatterns + urls_submissions.urlpatterns
