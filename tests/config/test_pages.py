"""Public pages, error pages and researcher sign-in."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.mark.django_db
def test_home_page_points_participants_and_researchers_the_right_way(client: Client) -> None:
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "personal link" in html
    assert "Researcher sign-in" in html
    assert "cdn" not in html.lower()  # every library is served from our static/vendor


@pytest.mark.django_db
def test_unknown_page_uses_the_custom_404(client: Client) -> None:
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    assert "We could not find this page" in response.content.decode()


@pytest.mark.django_db
def test_researcher_home_requires_sign_in(client: Client) -> None:
    response = client.get("/study/researchers/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


@pytest.mark.django_db
def test_participant_gets_the_custom_403_on_researcher_pages(client: Client, participant) -> None:
    client.force_login(participant)
    response = client.get("/study/researchers/")
    assert response.status_code == 403
    assert "You do not have access" in response.content.decode()


@pytest.mark.django_db
def test_researcher_signs_in_with_email_and_password(client: Client, researcher) -> None:
    response = client.post(
        "/accounts/login/",
        {"login": "rita@example.org", "password": "correct horse battery staple"},
    )
    assert response.status_code == 302
    assert response["Location"] == "/study/researchers/"
    page = client.get("/study/researchers/")
    assert page.status_code == 200
    assert "Researcher home" in page.content.decode()


@pytest.mark.django_db
def test_open_signup_is_closed(client: Client) -> None:
    response = client.post(
        "/accounts/signup/",
        {"email": "stranger@example.org", "password1": "x9!long-pass", "password2": "x9!long-pass"},
    )
    assert "Sign Up Closed" in response.content.decode() or response.status_code in {403, 404}
    from study.models import User

    assert not User.objects.filter(email="stranger@example.org").exists()


@pytest.mark.django_db
def test_two_factor_setup_is_available_to_researchers(client: Client, researcher) -> None:
    client.force_login(researcher)
    # Turning on two-factor asks for the password again (allauth's reauthentication).
    first = client.get("/accounts/2fa/totp/activate/")
    assert first.status_code == 302
    assert first["Location"].startswith("/accounts/reauthenticate/")
    client.post(first["Location"], {"password": "correct horse battery staple"})
    response = client.get("/accounts/2fa/totp/activate/")
    assert response.status_code == 200
    assert "secret" in response.content.decode().lower()
