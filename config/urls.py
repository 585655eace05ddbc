"""Top-level URL routes. Each app has its own namespaced ``urls.py``."""

from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from config import health, views

admin.site.site_header = "HAI-Eval administration"
admin.site.site_title = "HAI-Eval admin"
admin.site.index_title = "Studies, participants and the task bank"

urlpatterns = [
    path("", views.home, name="home"),
    path("healthz/", health.healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/", include("allauth.urls")),
    path("study/", include("study.urls")),
    path("ide/", include("ide_bridge.urls")),
    path("evaluation/", include("evaluation.urls")),
]

handler403 = "config.views.permission_denied"
handler404 = "config.views.page_not_found"
handler500 = "config.views.server_error"
