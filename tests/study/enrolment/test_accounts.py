"""Anonymous participant accounts: creation, credential sheets and one-time login links."""

from __future__ import annotations

import csv
import io
import re
import threading
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import Http404
from django.test import Client, RequestFactory
from django.urls import reverse
from django.utils import timezone

from study.enrolment import accounts
from study.enrolment.accounts import (
    LinkInvalid,
    NewAccount,
    create_participants,
    credential_sheet_csv,
    hash_token,
    issue_login_link,
    redeem_login_link,
)
from study.enrolment.admin import create_participants_view
from study.models import LoginLink, Participant, Study, User
from study.vault.services import store_contact
from tests.factories import ResearcherFactory, UserFactory
from tests.study.helpers import database_text

pytestmark = pytest.mark.usefixtures("fresh_cache")

USERNAME = re.compile(r"^p-[a-z]+-[a-z]+-\d{3}$")


def signed_in_user_id(client: Client) -> str | None:
    return client.session.get("_auth_user_id")


@pytest.fixture
def study(db: None) -> Study:
    return Study.objects.create(slug="pilot", title="Pilot study", status=Study.Status.RECRUITING)


@pytest.fixture
def account(study: Study, admin_researcher: User) -> NewAccount:
    return create_participants(study, 1, created_by=admin_researcher)[0]


def test_create_participants_makes_n_accounts_with_unique_pseudonyms(
    study: Study, admin_researcher: User
) -> None:
    created = create_participants(study, 25, created_by=admin_researcher)

    assert len(created) == 25
    usernames = [a.username for a in created]
    assert len(set(usernames)) == 25
    assert all(USERNAME.match(name) for name in usernames)
    participants = Participant.objects.filter(study=study).select_related("user")
    assert participants.count() == 25
    for participant in participants:
        assert not participant.user.has_usable_password()
        assert re.fullmatch(r"[0-9a-f]{16}", participant.internal_id)
        assert participant.links.filter(used_at__isnull=True).count() == 1
    for new in created:
        assert new.login_path == f"/study/enrolment/login/{new.token}/"
        assert new.token not in repr(new)


def test_usernames_already_taken_are_skipped(
    study: Study, admin_researcher: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    User.objects.create(username="p-amber-fox-100")
    names = iter(["p-amber-fox-100", "p-amber-fox-100", "p-brave-owl-200", "p-calm-yak-300"])
    monkeypatch.setattr(accounts, "_candidate_username", lambda: next(names))

    created = create_participants(study, 2, created_by=admin_researcher)

    assert sorted(a.username for a in created) == ["p-brave-owl-200", "p-calm-yak-300"]


def test_batch_size_is_limited(study: Study, admin_researcher: User) -> None:
    with pytest.raises(ValueError, match="between 1 and 500"):
        create_participants(study, 501, created_by=admin_researcher)
    with pytest.raises(ValueError, match="between 1 and 500"):
        create_participants(study, 0, created_by=admin_researcher)


def test_credential_sheet_has_only_username_and_login_url(
    study: Study, admin_researcher: User
) -> None:
    created = create_participants(study, 3, created_by=admin_researcher)

    rows = list(csv.reader(io.StringIO(credential_sheet_csv(created, "https://study.example/"))))

    assert rows[0] == ["username", "login_url"]
    assert rows[1:] == [
        [a.username, f"https://study.example/study/enrolment/login/{a.token}/"] for a in created
    ]


def test_plain_tokens_never_reach_the_database(study: Study, admin_researcher: User) -> None:
    created = create_participants(study, 5, created_by=admin_researcher)

    dump = database_text()
    for new in created:
        assert new.token not in dump
        assert hash_token(new.token) in dump


# --- Login links over HTTP ---------------------------------------------------------------------
def test_opening_a_link_shows_a_confirm_page_and_does_not_use_it(account: NewAccount) -> None:
    client = Client()

    response = client.get(account.login_path)

    assert response.status_code == 200
    assert b"Continue to the study" in response.content
    assert response["Cache-Control"] == "no-store"
    assert signed_in_user_id(client) is None
    assert LoginLink.objects.get(participant=account.participant).used_at is None


def test_confirming_a_link_signs_in_and_goes_to_the_next_step(account: NewAccount) -> None:
    client = Client()

    response = client.post(account.login_path)

    assert response.status_code == 302
    assert response["Location"] == reverse("study:next")
    assert signed_in_user_id(client) == str(account.participant.user_id)
    assert LoginLink.objects.get(participant=account.participant).used_at is not None


def test_the_confirm_form_passes_the_csrf_check(account: NewAccount) -> None:
    client = Client(enforce_csrf_checks=True)
    page = client.get(account.login_path)
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.content)
    assert token is not None

    response = client.post(account.login_path, {"csrfmiddlewaretoken": token.group(1).decode()})

    assert response.status_code == 302
    assert signed_in_user_id(client) == str(account.participant.user_id)


def test_a_used_link_says_it_was_used(account: NewAccount) -> None:
    Client().post(account.login_path)
    other = Client()

    for response in (other.get(account.login_path), other.post(account.login_path)):
        assert response.status_code == 410
        assert b"already been used" in response.content
    assert signed_in_user_id(other) is None


def test_reopening_your_own_used_link_continues_the_study(account: NewAccount) -> None:
    client = Client()
    client.post(account.login_path)

    response = client.get(account.login_path)

    assert response.status_code == 302
    assert response["Location"] == reverse("study:next")


def test_an_expired_link_says_it_expired(account: NewAccount) -> None:
    LoginLink.objects.filter(participant=account.participant).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    client = Client()

    for response in (client.get(account.login_path), client.post(account.login_path)):
        assert response.status_code == 410
        assert b"expired" in response.content
    assert signed_in_user_id(client) is None


def test_an_unknown_link_is_not_found(db: None) -> None:
    response = Client().get("/study/enrolment/login/not-a-real-token/")

    assert response.status_code == 404
    assert b"We do not know this login link" in response.content


def test_a_withdrawn_participants_link_no_longer_works(account: NewAccount) -> None:
    Participant.objects.filter(pk=account.participant.pk).update(stage=Participant.Stage.WITHDRAWN)

    response = Client().post(account.login_path)

    assert response.status_code == 410
    assert b"left the study" in response.content


def test_a_new_link_replaces_unused_old_ones(account: NewAccount) -> None:
    new_path = issue_login_link(account.participant)

    assert new_path != account.login_path
    assert Client().post(account.login_path).status_code == 410
    assert Client().post(new_path).status_code == 302


def test_redemption_is_a_conditional_update(
    account: NewAccount, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = LoginLink.objects.select_related("participant__user").get(
        participant=account.participant
    )
    redeem_login_link(account.token)  # the other request wins
    first_use = LoginLink.objects.get(pk=stale.pk).used_at
    monkeypatch.setattr(accounts, "_find_link", lambda digest: stale)  # we read before it won

    with pytest.raises(LinkInvalid) as problem:
        redeem_login_link(account.token)

    assert problem.value.reason == LinkInvalid.Reason.USED
    assert LoginLink.objects.get(pk=stale.pk).used_at == first_use


@pytest.mark.django_db(transaction=True)
def test_concurrent_redemptions_have_exactly_one_winner() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("threads share one database only on PostgreSQL")
    study = Study.objects.create(slug="race", title="Race", status=Study.Status.RECRUITING)
    owner = ResearcherFactory.create(is_superuser=True)
    token = create_participants(study, 1, created_by=owner)[0].token
    barrier = threading.Barrier(6)
    outcomes: list[str] = []

    def attempt() -> None:
        try:
            barrier.wait()
            redeem_login_link(token)
            outcomes.append("won")
        except LinkInvalid as exc:
            outcomes.append(exc.reason)
        finally:
            connection.close()

    threads = [threading.Thread(target=attempt) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == ["used"] * 5 + ["won"]


def test_link_posts_are_rate_limited(account: NewAccount, settings: Any) -> None:
    settings.ACCOUNT_RATE_LIMITS = {"study_link": "3/m/ip"}
    client = Client()
    for _ in range(3):
        client.post("/study/enrolment/login/unknown-token/")

    response = client.post(account.login_path)

    assert response.status_code == 429
    assert response["Retry-After"] == "60"
    assert LoginLink.objects.get(participant=account.participant).used_at is None


# --- Researcher tools in the admin ------------------------------------------------------------
def test_researcher_downloads_a_credential_sheet(study: Study, admin_researcher: User) -> None:
    request = RequestFactory().post("/admin/", {"n": "4", "ttl_days": "30"})
    request.user = admin_researcher

    response = create_participants_view(request, study.pk)

    assert response.status_code == 200
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert re.fullmatch(
        r'attachment; filename="credentials-pilot-\d{8}-\d{6}\.csv"',
        response["Content-Disposition"],
    )
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0] == ["username", "login_url"]
    assert len(rows) == 5
    assert all(url.startswith("http://testserver/study/enrolment/login/") for _, url in rows[1:])
    assert Participant.objects.filter(study=study).count() == 4


def test_create_form_refuses_more_than_500(study: Study, admin_researcher: User) -> None:
    request = RequestFactory().post("/admin/", {"n": "501", "ttl_days": "30"})
    request.user = admin_researcher

    response = create_participants_view(request, study.pk)

    assert response["Content-Type"].startswith("text/html")
    assert not Participant.objects.exists()


def test_creating_accounts_needs_the_add_participant_permission(study: Study) -> None:
    request = RequestFactory().post("/admin/", {"n": "2", "ttl_days": "30"})
    request.user = UserFactory.create(username="staff-without-perms@example.org", is_staff=True)

    with pytest.raises(PermissionDenied):
        create_participants_view(request, study.pk)


def test_researcher_cannot_create_accounts_in_another_researchers_study(
    study: Study, researcher: User
) -> None:
    researcher.user_permissions.add(Permission.objects.get(codename="add_participant"))
    request = RequestFactory().post("/admin/", {"n": "2", "ttl_days": "30"})
    request.user = User.objects.get(pk=researcher.pk)

    with pytest.raises(Http404):
        create_participants_view(request, study.pk)
    assert not Participant.objects.exists()


def test_issue_login_link_action_shows_new_links_once(
    account: NewAccount, admin_researcher: User
) -> None:
    client = Client()
    client.force_login(admin_researcher)

    response = client.post(
        reverse("admin:study_participant_changelist"),
        {"action": "issue_login_links", "_selected_action": [account.participant.pk]},
    )

    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    url = re.search(rb"http://testserver(/study/enrolment/login/[^/<]+/)", response.content)
    assert url is not None
    assert Client().post(account.login_path).status_code == 410
    assert Client().post(url.group(1).decode()).status_code == 302


def test_participant_admin_lists_no_vault_data(
    account: NewAccount, admin_researcher: User, study: Study
) -> None:
    store_contact(account.participant.internal_id, study.slug, email="grace@example.org")
    client = Client()
    client.force_login(admin_researcher)

    listing = client.get(reverse("admin:study_participant_changelist"))
    detail = client.get(reverse("admin:study_participant_change", args=[account.participant.pk]))

    assert listing.status_code == detail.status_code == 200
    assert account.username.encode() in listing.content
    assert b"grace@example.org" not in listing.content + detail.content


def test_signed_in_participant_gets_no_admin_pages(account: NewAccount, study: Study) -> None:
    client = Client()
    client.post(account.login_path)

    for url in (
        reverse("admin:study_participant_changelist"),
        reverse("admin:vault_vaultentry_read"),
        reverse("admin:vault_vaultentry_changelist"),
    ):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith(reverse("admin:login"))
