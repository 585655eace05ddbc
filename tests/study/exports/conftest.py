"""The demo study's export packages, built once per test module that asks for them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command

from tests.study.exports.demo_packages import Built, build_demo_packages


@pytest.fixture(scope="module")
def built(
    django_db_setup: None, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Built]:
    # The rows are committed outside any test's transaction: flush them even when building
    # fails half-way, or the leftovers break unrelated tests later in the run.
    with django_db_blocker.unblock():
        try:
            yield build_demo_packages(tmp_path_factory.mktemp("exports"))
        finally:
            call_command("flush", interactive=False, verbosity=0)
