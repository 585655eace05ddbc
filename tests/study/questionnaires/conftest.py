"""Fixtures of the questionnaire tests: a version with every item type, one with conditions."""

from __future__ import annotations

import pytest

from study.models import QuestionnaireVersion
from tests.study.fixtures_instruments import ALL_TYPES, CONDITIONAL, make_version


@pytest.fixture
def all_types(db: None) -> QuestionnaireVersion:
    return make_version(ALL_TYPES)


@pytest.fixture
def conditional(db: None) -> QuestionnaireVersion:
    return make_version(CONDITIONAL, slug="cond")
