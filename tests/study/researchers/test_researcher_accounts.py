"""Researchers are created by an admin and invited by e-mail; they hold the researcher group."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.core import mail
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from study.models import User


@pytest.mark.django_db
def test_migrate_creates_the_researcher_group_with_its_permissions() -> None:
    group = Group.objects.get(name="researcher")
    assert "view_user" in set(group.permissions.values_list("codename", flat=True))


@pytest.mark.django_db(transaction=True)
def test_invited_researcher_sets_a_password_and_signs_in(
    capsys: pytest.CaptureFixture[str],
) -> None:
    call_command("invite_researcher", "Rosa@Example.org", "--base-url", "http://testserver")
    user = User.objects.get(email="rosa@example.org")
    assert user.is_staff
    assert not user.has_usable_password()
    assert user.groups.filter(name="researcher").exists()
    assert len(mail.outbox) == 1
    link = next(line for line in mail.outbox[0].body.splitlines() if "/accounts/" in line).strip()
    assert link in capsys.readouterr().out

    client = Client()
    form_page = client.get(link.removeprefix("http://testserver"), follow=True)
    assert form_page.status_code == 200
    new_password = "a-long-unusual-passphrase-42"
    response = client.post(
        form_page.redirect_chain[-1][0] if form_page.redirect_chain else link,
        {"password1": new_password, "password2": new_password},
    )
    assert response.status_code == 302
    assert Client().login(username="rosa@example.org", password=new_password)


@pytest.mark.django_db
def test_invite_rejects_a_non_email() -> None:
    with pytest.raises(CommandError, match="not an e-mail address"):
        call_command("invite_researcher", "rosa")


@pytest.mark.django_db
def test_seed_demo_is_idempotent_and_logs_in() -> None:
    call_command("seed_demo")
    call_command("seed_demo")
    assert User.objects.filter(email="admin@example.org").count() == 1
    assert Client().login(username="admin@example.org", password="demo-researcher")
