"""Admin of platform accounts (researchers are invited with ``manage.py invite_researcher``).

A researcher sees the accounts of their own studies only (its participants and researchers), and
so only those accounts' e-mail addresses and authenticators: allauth's admins of those two are
replaced by the same pages scoped through ``study.access.users_for_researcher``.
"""

from __future__ import annotations

from typing import Any

from allauth.account.admin import EmailAddressAdmin
from allauth.account.models import EmailAddress
from allauth.mfa.admin import AuthenticatorAdmin
from allauth.mfa.models import Authenticator
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.db.models import QuerySet
from django.http import HttpRequest

from study.access import users_for_researcher
from study.access.admin import ScopedAdminMixin
from study.models import User


@admin.register(User)
class PlatformUserAdmin(ScopedAdminMixin, UserAdmin):
    list_display = ("username", "email", "is_staff", "is_active", "last_login")
    list_filter = ("is_staff", "is_superuser", "is_active", "groups")


class _OwnedByVisibleUser(ScopedAdminMixin):
    def scope_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        return queryset.filter(user__in=users_for_researcher(request.user))


admin.site.unregister(EmailAddress)
admin.site.unregister(Authenticator)


@admin.register(EmailAddress)
class ScopedEmailAddressAdmin(_OwnedByVisibleUser, EmailAddressAdmin):
    pass


@admin.register(Authenticator)
class ScopedAuthenticatorAdmin(_OwnedByVisibleUser, AuthenticatorAdmin):
    pass
