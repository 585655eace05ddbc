"""Two-factor sign-in of researchers: the admin login goes through allauth's, a session without
the second factor reaches neither the admin nor the vault, and ``HAIEVAL_REQUIRE_MFA`` sends a
researcher without an authenticator to set one up."""

from __future__ import annotations

from typing import Any

import pytest
from allauth.mfa.models import Authenticator
from allauth.mfa.totp.internal.auth import (
    TOTP,
    format_hotp_value,
    generate_totp_secret,
    hotp_value,
    yield_hotp_counters_from_time,
)
from django.test import Client

from tests.config.test_settings_from_environment import STRONG_KEY, VAULT_KEY, manage

PASSWORD = "correct horse battery staple"
VAULT_READ = "/admin/vault/vaultentry/read/"

pytestmark = pytest.mark.usefixtures("fresh_cache")


@pytest.fixture
def secret(researcher: Any) -> str:
    value = generate_totp_secret()
    TOTP.activate(researcher, value)
    return value


@pytest.fixture
def vault_reader(researcher: Any) -> Any:
    from django.contrib.auth.models import Permission

    researcher.user_permissions.add(Permission.objects.get(codename="view_vault"))
    return researcher


def current_code(secret: str) -> str:
    counters = list(yield_hotp_counters_from_time())
    return format_hotp_value(hotp_value(secret, counters[len(counters) // 2]))  # now


def test_admin_login_form_does_not_sign_in_with_the_password_alone(
    client: Client, researcher: Any, secret: str
) -> None:
    response = client.post(
        "/admin/login/?next=/admin/", {"username": researcher.username, "password": PASSWORD}
    )
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert "_auth_user_id" not in client.session
    assert client.get("/admin/")["Location"].startswith("/admin/login/")


def test_admin_login_asks_for_the_code_then_opens_the_admin(
    client: Client, researcher: Any, secret: str, vault_reader: Any
) -> None:
    login_page = client.get("/admin/login/?next=/admin/")
    assert login_page.status_code == 302
    assert login_page["Location"] == "/accounts/login/?next=%2Fadmin%2F"

    after_password = client.post(
        login_page["Location"], {"login": researcher.email, "password": PASSWORD}
    )
    assert after_password.status_code == 302
    assert after_password["Location"] == "/accounts/2fa/authenticate/"
    assert client.get("/admin/").status_code == 302  # not signed in yet

    wrong = client.post("/accounts/2fa/authenticate/", {"code": "000000"})
    assert wrong.status_code == 200
    assert client.get("/admin/").status_code == 302

    after_code = client.post("/accounts/2fa/authenticate/", {"code": current_code(secret)})
    assert after_code.status_code == 302
    assert after_code["Location"] == "/admin/"
    assert client.get("/admin/").status_code == 200
    assert client.get(VAULT_READ).status_code == 200


@pytest.mark.parametrize("path", ["/admin/", VAULT_READ, "/study/researchers/"])
def test_a_password_only_session_of_a_totp_account_is_signed_out(
    client: Client, researcher: Any, secret: str, vault_reader: Any, path: str
) -> None:
    assert client.login(username=researcher.username, password=PASSWORD)  # password, no code
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/?next=")
    assert "_auth_user_id" not in client.session
    assert client.get("/admin/").status_code == 302


def test_without_required_mfa_a_researcher_without_totp_uses_the_admin(
    client: Client, researcher: Any, settings: Any
) -> None:
    settings.HAIEVAL_REQUIRE_MFA = False
    client.force_login(researcher)
    assert client.get("/admin/").status_code == 200


@pytest.mark.parametrize("path", ["/admin/", "/admin/study/study/", "/study/researchers/"])
def test_required_mfa_sends_a_researcher_without_totp_to_set_it_up(
    client: Client, researcher: Any, settings: Any, path: str
) -> None:
    settings.HAIEVAL_REQUIRE_MFA = True
    client.force_login(researcher)
    response = client.get(path)
    assert response.status_code == 302
    assert response["Location"] == "/accounts/2fa/totp/activate/"
    # The set-up itself (behind allauth's re-authentication) stays reachable.
    set_up = client.get("/accounts/2fa/totp/activate/")
    assert set_up["Location"].startswith("/accounts/reauthenticate/")
    client.post(set_up["Location"], {"password": PASSWORD})
    assert client.get("/accounts/2fa/totp/activate/").status_code == 200


def test_required_mfa_lets_a_researcher_with_totp_in_after_the_code(
    client: Client, researcher: Any, secret: str, settings: Any
) -> None:
    settings.HAIEVAL_REQUIRE_MFA = True
    client.post("/accounts/login/", {"login": researcher.email, "password": PASSWORD})
    client.post("/accounts/2fa/authenticate/", {"code": current_code(secret)})
    assert client.get("/admin/").status_code == 200


def test_required_mfa_leaves_participants_alone(
    client: Client, participant: Any, settings: Any
) -> None:
    settings.HAIEVAL_REQUIRE_MFA = True
    client.force_login(participant)
    response = client.get("/")
    assert response.get("Location") != "/accounts/2fa/totp/activate/"


PRINT_SETTING = "from django.conf import settings; print(settings.HAIEVAL_REQUIRE_MFA)"
PRODUCTION = {
    "DJANGO_SETTINGS_MODULE": "config.settings.production",
    "DJANGO_SECRET_KEY": STRONG_KEY,
    "DJANGO_ALLOWED_HOSTS": "study.example.org",
    "VAULT_KEYS": VAULT_KEY,
    "EXPORT_HMAC_KEY": "e" * 48,
    "HAIEVAL_CHECK_REDIS_AT_STARTUP": "false",
}


@pytest.mark.timeout(180)
def test_production_requires_two_factor_unless_told_otherwise() -> None:
    assert (
        manage("shell", "--no-imports", "-c", PRINT_SETTING, **PRODUCTION).stdout.strip() == "True"
    )
    off = manage(
        "shell", "--no-imports", "-c", PRINT_SETTING, **PRODUCTION, HAIEVAL_REQUIRE_MFA="false"
    )
    assert off.stdout.strip() == "False"
    dev = manage(
        "shell", "--no-imports", "-c", PRINT_SETTING, DJANGO_SETTINGS_MODULE="config.settings.dev"
    )
    assert dev.stdout.strip() == "False"


@pytest.mark.django_db(transaction=True)  # allauth signals the set-up on commit
def test_setting_up_totp_keeps_the_researcher_signed_in(
    client: Client, researcher: Any, settings: Any
) -> None:
    settings.HAIEVAL_REQUIRE_MFA = True
    client.post("/accounts/login/", {"login": researcher.email, "password": PASSWORD})
    assert client.get("/admin/")["Location"] == "/accounts/2fa/totp/activate/"
    client.post("/accounts/reauthenticate/", {"password": PASSWORD})
    form = client.get("/accounts/2fa/totp/activate/")
    secret = form.context["form"].secret
    activated = client.post("/accounts/2fa/totp/activate/", {"code": current_code(secret)})
    assert activated.status_code == 302
    assert Authenticator.objects.filter(user=researcher, type=Authenticator.Type.TOTP).exists()
    assert client.get("/admin/").status_code == 200
    # A new session of the same account needs the code again.
    other = Client()
    other.post("/accounts/login/", {"login": researcher.email, "password": PASSWORD})
    assert other.get("/admin/").status_code == 302
