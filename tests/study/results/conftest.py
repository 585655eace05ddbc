"""A recruiting study that releases reports at once, with two participants in session 1."""

from __future__ import annotations

import pytest

from study.models import Participant, Study
from tests.factories import UserFactory
from tests.study.factories_study import make_participant, make_study


@pytest.fixture
def study(db: None) -> Study:
    return make_study(report_release=Study.ReleasePolicy.IMMEDIATELY, status="recruiting")


@pytest.fixture
def amber(study: Study) -> Participant:
    user = UserFactory(username="p-amber-fox")
    return make_participant(study, user=user, stage=Participant.Stage.IN_SESSION, session_index=1)


@pytest.fixture
def blue(study: Study) -> Participant:
    user = UserFactory(username="p-blue-owl")
    return make_participant(study, user=user, stage=Participant.Stage.IN_SESSION, session_index=1)
