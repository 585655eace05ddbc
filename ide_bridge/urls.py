"""HTTP routes of the participant's coding environment (namespace ``ide_bridge``): one prefix
per capability package, so ``/ide/<package>/...`` is served by ``ide_bridge/<package>/``."""

from __future__ import annotations

from django.urls import include, path

app_name = "ide_bridge"

urlpatterns = [
    path("workspace/", include("ide_bridge.workspace.urls")),
    path("ai/", include("ide_bridge.ai.urls")),
    path("telemetry/", include("ide_bridge.telemetry.urls")),
    path("submissions/", include("ide_bridge.submissions.urls")),
]
