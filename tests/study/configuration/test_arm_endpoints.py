"""An AI arm's assistant uses a model endpoint: the arm must name one, and the configuration
snapshot freezes the endpoint's settings (never a key) for the participants who join."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from evaluation.models import ModelEndpoint
from study.configuration.snapshots import current_snapshot
from study.configuration.validation import configuration_problems
from tests.study.helpers import journey_study

pytestmark = pytest.mark.django_db


def test_an_endpoint_arm_names_its_endpoint_and_the_snapshot_freezes_its_settings() -> None:
    study = journey_study()
    arm = study.arms.get(condition="B")
    arm.ai_provider = "endpoint"
    with pytest.raises(ValidationError) as refused:
        arm.full_clean()
    choose = "Choose the model endpoint this arm's assistant uses."
    assert refused.value.message_dict == {"ai_endpoint": [choose]}
    arm.save(update_fields=["ai_provider"])
    assert f"Arm B: {choose}" in configuration_problems(study)

    arm.ai_endpoint = ModelEndpoint.objects.create(
        name="gpt-4o",
        base_url="https://api.example/v1",
        model="gpt-4o-2024-08-06",
        api_key_env="OPENAI_API_KEY",
        price_input_per_mtok="2.5",
    )
    arm.full_clean()
    arm.save(update_fields=["ai_endpoint"])
    assert not any(p.startswith("Arm B") for p in configuration_problems(study))
    frozen = current_snapshot(study).content["arms"]["B"]
    assert (frozen["ai_provider"], frozen["model"]) == ("endpoint", "gpt-4o-2024-08-06")
    assert frozen["ai_endpoint"] == {
        "name": "gpt-4o",
        "base_url": "https://api.example/v1",
        "model": "gpt-4o-2024-08-06",
        "api_key_env": "OPENAI_API_KEY",
        "supports_tools": True,
        "supports_usage": True,
        "supports_vision": False,
        "price_input_per_mtok": 2.5,
        "price_output_per_mtok": 0.0,
        "requests_per_minute": 0,
    }
    # Editing the endpoint makes a new snapshot version for those who join later.
    ModelEndpoint.objects.filter(name="gpt-4o").update(model="gpt-4o-2024-11-20")
    assert current_snapshot(study).content["arms"]["B"]["model"] == "gpt-4o-2024-11-20"
