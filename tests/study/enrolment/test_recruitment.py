"""The public recruitment link: external ids (PROLIFIC_PID) live only in the encrypted vault."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from study.enrolment import accounts
from study.enrolment.accounts import JoinRefused, join_via_recruitment
from study.models import Participant, Study, User
from study.vault.services import read_vault
from tests.study.helpers import database_text

pytestmark = pytest.mark.usefixtures("fresh_cache")

PID = "5f1e0c0ffee1234567890abc"


@pytest.fixture
def study(db: None) -> Study:
    return Study.objects.create(
        slug="pilot",
        title="Pilot study",
        status=Study.Status.RECRUITING,
        recruitment_token="join-abc123",
        recruitment_id_param="PROLIFIC_PID",
    )


def join_url(study: Study, pid: str | None = PID) -> str:
    url = reverse("study:join", args=[study.recruitment_token])
    return f"{url}?PROLIFIC_PID={pid}" if pid else url


def join(client: Client, study: Study, pid: str | None = PID) -> Any:
    return client.post(join_url(study, pid), {"external_id": pid} if pid else {})


def test_join_page_asks_first_and_creates_nothing(study: Study) -> None:
    response = Client().get(join_url(study))

    assert response.status_code == 200
    assert b"Continue to the study" in response.content
    assert "no-store" in response["Cache-Control"]
    assert not Participant.objects.exists()


def test_joining_signs_in_and_keeps_the_external_id_only_in_the_vault(
    study: Study, admin_researcher: User
) -> None:
    client = Client()

    response = client.post(join_url(study))  # the id comes from the URL

    assert response.status_code == 302
    assert response["Location"] == reverse("study:next")
    participant = Participant.objects.get()
    assert client.session["_auth_user_id"] == str(participant.user_id)
    assert participant.links.get().used_at is not None
    assert PID not in database_text()
    [row] = read_vault(admin_researcher, study.slug, "test")
    assert row["internal_id"] == participant.internal_id
    assert row["external_ids"] == {"PROLIFIC_PID": PID}


def test_the_same_external_id_twice_is_the_same_participant(study: Study) -> None:
    first, second = Client(), Client()

    join(first, study)
    join(second, study)

    participant = Participant.objects.get()
    assert first.session["_auth_user_id"] == second.session["_auth_user_id"]
    assert second.session["_auth_user_id"] == str(participant.user_id)


def test_the_service_returns_a_fresh_login_for_a_returning_id(study: Study) -> None:
    first = join_via_recruitment(study, "join-abc123", PID)
    again = join_via_recruitment(study, "join-abc123", PID)

    assert again.participant.pk == first.participant.pk
    assert again.token != first.token
    assert Participant.objects.count() == 1


def test_two_racing_joins_with_one_external_id_make_one_participant(
    study: Study, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = join_via_recruitment(study, "join-abc123", PID)
    real_lookup = accounts.find_internal_id
    calls: list[str] = []

    def lookup_before_the_other_join_committed(slug: str, external_id: str) -> str | None:
        calls.append(external_id)
        return None if len(calls) == 1 else real_lookup(slug, external_id)

    monkeypatch.setattr(accounts, "find_internal_id", lookup_before_the_other_join_committed)

    second = join_via_recruitment(study, "join-abc123", PID)

    assert second.participant.pk == first.participant.pk
    assert Participant.objects.count() == 1
    assert User.objects.filter(participant__isnull=False).count() == 1


def test_the_same_external_id_in_another_study_is_another_participant(study: Study) -> None:
    other = Study.objects.create(
        slug="other", title="Other", status=Study.Status.RECRUITING, recruitment_token="join-xyz"
    )

    a = join_via_recruitment(study, "join-abc123", PID)
    b = join_via_recruitment(other, "join-xyz", PID)

    assert a.participant.pk != b.participant.pk


def test_joining_without_an_external_id_and_double_clicking_makes_one_account(
    study: Study,
) -> None:
    client = Client()

    join(client, study, pid=None)
    response = join(client, study, pid=None)

    assert response.status_code == 302
    assert Participant.objects.count() == 1


def test_a_closed_study_takes_nobody(study: Study) -> None:
    Study.objects.filter(pk=study.pk).update(status=Study.Status.CLOSED)

    for response in (Client().get(join_url(study)), join(Client(), study)):
        assert response.status_code == 410
        assert b"no new participants" in response.content
    assert not Participant.objects.exists()


def test_a_draft_study_is_not_open_yet(study: Study) -> None:
    Study.objects.filter(pk=study.pk).update(status=Study.Status.DRAFT)

    response = join(Client(), study)

    assert response.status_code == 403
    assert b"not open for participants yet" in response.content


def test_an_unknown_recruitment_link_is_not_found(db: None) -> None:
    response = Client().get("/study/enrolment/join/nope/")

    assert response.status_code == 404


def test_the_service_checks_the_token(study: Study) -> None:
    with pytest.raises(JoinRefused) as refused:
        join_via_recruitment(study, "wrong", PID)

    assert refused.value.status == 404


def test_a_damaged_external_id_is_refused(study: Study) -> None:
    response = join(Client(), study, pid="<script>")

    assert response.status_code == 400
    assert not Participant.objects.exists()


def test_a_withdrawn_participant_cannot_rejoin(study: Study) -> None:
    join(Client(), study)
    Participant.objects.update(stage=Participant.Stage.WITHDRAWN)

    response = join(Client(), study)

    assert response.status_code == 410
    assert b"left the study" in response.content
    assert Participant.objects.count() == 1


def test_new_accounts_per_study_are_limited_whatever_address_they_come_from(
    study: Study, settings: Any
) -> None:
    settings.ACCOUNT_RATE_LIMITS = {"study_link": "100/m/ip", "study_join": "2/h/key"}
    other = Study.objects.create(
        slug="other", title="Other", status=Study.Status.RECRUITING, recruitment_token="join-xyz"
    )
    for n in range(2):
        response = Client(REMOTE_ADDR=f"203.0.113.{n}").post(join_url(study, f"pid-{n}"))
        assert response.status_code == 302

    refused = Client(REMOTE_ADDR="198.51.100.7").post(join_url(study, "pid-new"))

    assert refused.status_code == 429
    assert refused["Retry-After"] == "3600"
    assert b"taken many new participants in the last hour" in refused.content
    assert Participant.objects.filter(study=study).count() == 2
    # A returning participant still gets in, and other studies have their own budget.
    assert Client(REMOTE_ADDR="198.51.100.8").post(join_url(study, "pid-1")).status_code == 302
    assert Client().post(reverse("study:join", args=["join-xyz"])).status_code == 302
    assert Participant.objects.filter(study=other).count() == 1
