"""Top-level URL routes. Each app has its own namespaced ``urls.py``."""

from __future__ import annotations

from allauth.account.decorators import secure_admin_login
from django.contrib import admin
from django.urls import include, path

from config import health, views

admin.site.site_header = "HAI-Eval administration"
admin.site.site_title = "HAI-Eval admin"
admin.site.index_title = "Studies, participants and the task bank"
# The admin has no login of its own: allauth's (rate-limited, with the two-factor step) signs
# staff in; study/researchers/mfa.py refuses staff sessions that skipped the second factor.
admin.site.login = secure_admin_login(admin.site.login)  # type: ignore[method-assign]

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
