"""Write operations of the human study. Each runs in one transaction."""

from __future__ import annotations

from dataclasses import dataclass

from allauth.account.forms import default_token_generator
from allauth.account.utils import user_pk_to_url_str
from django.core.mail import send_mail
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse

from study.models import User
from study.researchers.roles import sync_researcher_group


@dataclass(frozen=True)
class Invitation:
    user: User
    created: bool
    set_password_url: str


@transaction.atomic
def invite_researcher(email: str, *, base_url: str, superuser: bool = False) -> Invitation:
    """Create (or find) a researcher account and e-mail it a one-time set-password link.

    The account is staff, in the ``researcher`` group, and has no usable password until the
    researcher follows the link. The e-mail goes out only if the transaction commits.
    """
    email = User.objects.normalize_email(email.strip()).lower()
    user = User.objects.filter(email__iexact=email).first()
    created = user is None
    if user is None:
        user = User(username=email, email=email, is_staff=True, is_superuser=superuser)
        user.set_unusable_password()
        user.save()
    else:
        user.is_staff = True
        user.is_superuser = user.is_superuser or superuser
        user.save(update_fields=["is_staff", "is_superuser"])
    user.groups.add(sync_researcher_group())
    key = default_token_generator.make_token(user)
    path = reverse(
        "account_reset_password_from_key",
        kwargs={"uidb36": user_pk_to_url_str(user), "key": key},
    )
    url = base_url.rstrip("/") + path
    context = {"email": email, "set_password_url": url}
    transaction.on_commit(
        lambda: send_mail(
            subject=render_to_string("emails/researcher-invite-subject.txt", context).strip(),
            message=render_to_string("emails/researcher-invite-body.txt", context),
            from_email=None,
            recipient_list=[email],
        )
    )
    return Invitation(user=user, created=created, set_password_url=url)
