"""Demo data for a newcomer's first run (``manage.py seed_demo``)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from study.models import User
from study.roles import sync_researcher_group

DEMO_ADMIN_EMAIL = "admin@example.org"


@transaction.atomic
def seed_demo(*, admin_password: str) -> dict[str, Any]:
    """Create or refresh the demo superuser researcher; return a JSON-ready summary."""
    admin = User.objects.filter(username=DEMO_ADMIN_EMAIL).first()
    if admin is None:
        admin = User(username=DEMO_ADMIN_EMAIL, email=DEMO_ADMIN_EMAIL)
        admin.is_staff = admin.is_superuser = True
        admin.set_password(admin_password)
        admin.save()
    else:
        admin.is_staff = admin.is_superuser = admin.is_active = True
        admin.set_password(admin_password)
        admin.save(update_fields=["is_staff", "is_superuser", "is_active", "password"])
    admin.groups.add(sync_researcher_group())
    return {"admin": {"email": DEMO_ADMIN_EMAIL, "login_url": "/admin/"}}
