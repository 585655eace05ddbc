"""Admin of platform accounts (researchers are invited with ``manage.py invite_researcher``)."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from study.models import User


@admin.register(User)
class PlatformUserAdmin(UserAdmin):
    list_display = ("username", "email", "is_staff", "is_active", "last_login")
    list_filter = ("is_staff", "is_superuser", "is_active", "groups")
