"""Settings come from the environment and fail loudly, in one sentence, when they are wrong."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STRONG_KEY = "k3y-" + "x7Qp9zLm2Rv8Tn4Wc6Yb1Hd5Jf0Gs3Ka" * 2
VAULT_KEY = "wb3J8NiPFLM7kBD0lx1cIf6RCtVaGuEyotVV8vPZg3s="  # a valid Fernet key


def manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "HAIEVAL_"))}
    base_env["HAIEVAL_VAR_DIR"] = str(ROOT / "var" / "test-settings")
    base_env.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=base_env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_without_secret_key_fails_with_one_clear_sentence() -> None:
    result = manage("check", DJANGO_SETTINGS_MODULE="config.settings.production")
    assert result.returncode == 1
    assert "DJANGO_SECRET_KEY is not set" in result.stderr
    assert "Traceback" not in result.stderr


def test_production_without_allowed_hosts_fails_clearly() -> None:
    result = manage(
        "check", DJANGO_SETTINGS_MODULE="config.settings.production", DJANGO_SECRET_KEY=STRONG_KEY
    )
    assert result.returncode == 1
    assert "DJANGO_ALLOWED_HOSTS is not set" in result.stderr
    assert "Traceback" not in result.stderr


def test_production_check_deploy_reports_no_issues() -> None:
    result = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DJANGO_SETTINGS_MODULE="config.settings.production",
        DJANGO_SECRET_KEY=STRONG_KEY,
        DJANGO_ALLOWED_HOSTS="study.example.org",
        VAULT_KEYS=VAULT_KEY,
        EXPORT_HMAC_KEY="e" * 48,
    )
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


def test_unparseable_database_url_fails_at_startup_in_one_sentence() -> None:
    result = manage("check", DATABASE_URL="this is not a url")
    assert result.returncode == 1
    assert "DATABASE_URL" in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unsupported_database_engine_is_refused() -> None:
    result = manage("check", DATABASE_URL="mysql://root@127.0.0.1/test")
    assert result.returncode == 1
    assert "PostgreSQL" in result.stderr


def test_unreachable_redis_in_production_fails_at_startup_in_one_sentence() -> None:
    result = manage(
        "check",
        DJANGO_SETTINGS_MODULE="config.settings.production",
        DJANGO_SECRET_KEY=STRONG_KEY,
        DJANGO_ALLOWED_HOSTS="study.example.org",
        VAULT_KEYS=VAULT_KEY,
        EXPORT_HMAC_KEY="e" * 48,
        REDIS_URL="redis://127.0.0.1:1/0",  # nothing listens on port 1
    )
    assert result.returncode == 1
    assert "Redis at REDIS_URL cannot be reached" in result.stderr
    assert "Traceback" not in result.stderr


def test_malformed_redis_url_is_refused() -> None:
    result = manage("check", REDIS_URL="localhost:6379")
    assert result.returncode == 1
    assert "REDIS_URL must start with" in result.stderr


@pytest.mark.parametrize("module", ["config.settings.dev", "config.settings.test"])
def test_aware_datetimes_everywhere(module: str) -> None:
    result = manage(
        "shell",
        "-c",
        "from django.conf import settings; print(settings.USE_TZ)",
        DJANGO_SETTINGS_MODULE=module,
    )
    assert result.stdout.strip().splitlines()[-1] == "True", result.stderr
