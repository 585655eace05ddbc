"""Routes of participant sign-in, included by ``study/urls.py`` into the ``study`` namespace.

- ``study:login_link_confirm`` — ``/study/login/<token>/``
- ``study:join`` — ``/study/join/<recruitment_token>/``
"""

from __future__ import annotations

from django.urls import path

from study import views_accounts

urlpatterns = [
    path("login/<str:token>/", views_accounts.login_link_confirm, name="login_link_confirm"),
    path("join/<str:recruitment_token>/", views_accounts.join, name="join"),
]
