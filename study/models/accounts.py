"""Models of the human study."""

from __future__ import annotations

from django.contrib.auth.models import AbstractUser


class User(AbstractUser):
    """Every account: researchers (staff, e-mail login) and, later, anonymous participants.

    A custom user model from the first migration, so later issues can add fields without a
    painful swap.
    """

    class Meta(AbstractUser.Meta):
        swappable = "AUTH_USER_MODEL"
