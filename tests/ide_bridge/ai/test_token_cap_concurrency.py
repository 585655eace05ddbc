"""Parallel AI requests on PostgreSQL: the token cap holds when requests arrive together.

Each request reserves its largest cost under the trial's row lock before the provider is
called, so requests sent at the same moment cannot all pass the check. The provider here is a
local OpenAI-compatible server that answers after 0.3 s with a reply using all of
``max_tokens`` (the worst case for the cap). Each thread has its own database connection and
closes it when done. SQLite cannot show the race (SELECT ... FOR UPDATE is a no-op there), so
the module skips on SQLite and fails under REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection
from django.test import Client

from ide_bridge.ai import budget
from ide_bridge.models import AIRequest, AITokenReservation
from tests.ide_bridge.ai.test_gateway_http import endpoint_arm, open_trial, post
from tests.llm_server import ScriptedLLM, Text

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("fresh_cache", "repeatable_seeds"),
]
THREADS = 12
CAP = 10_000


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        reason = (
            "parallel AI requests need PostgreSQL row locks (SELECT ... FOR UPDATE is a no-op "
            "on SQLite); set DATABASE_URL=postgres://..."
        )
        if os.environ.get("REQUIRE_SERVICES", "") in {"1", "true", "yes"}:
            pytest.fail(reason)
        pytest.skip(reason)


def whole_budget(body: dict[str, Any]) -> Text:
    """A model that talks until max_tokens, a moment after the request arrived."""
    budget = int(body["max_tokens"])
    return Text("Well, " * budget, usage=(21, budget), delay=0.3)


@pytest.fixture
def talker() -> Iterator[ScriptedLLM]:
    with ScriptedLLM(whole_budget) as llm:
        yield llm


def _chat_in_parallel(client: Client, trial: Any) -> tuple[list[Any], list[BaseException]]:
    barrier = threading.Barrier(THREADS)
    responses: list[Any] = []
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            own = Client()
            own.cookies = client.cookies
            barrier.wait(timeout=30)
            responses.append(post(own, trial, "chat", {"message": "Write it all"}))
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=ask) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return responses, errors


def test_parallel_requests_at_85_percent_of_the_cap_never_spend_more_than_the_cap(
    talker: ScriptedLLM,
) -> None:
    client, trial, _ = open_trial(ai_mode="chat", token_cap=CAP, **endpoint_arm(talker))
    AIRequest.objects.create(
        trial=trial, kind="chat", provider="endpoint", prompt_tokens=CAP * 85 // 100
    )

    responses, errors = _chat_in_parallel(client, trial)

    assert errors == []
    assert len(responses) == THREADS
    codes = Counter(r.status_code for r in responses)
    assert set(codes) == {200, 429}, codes
    assert codes[200] >= 1
    assert budget.tokens_used(trial) <= CAP
    rows = AIRequest.objects.filter(trial=trial).exclude(prompt_tokens=CAP * 85 // 100)
    assert sorted(rows.values_list("status", flat=True)) == sorted(
        ["ok"] * codes[200] + ["refused"] * codes[429]
    )
    # The provider was asked for no more than what was left at the time.
    assert sum(21 + sent["max_tokens"] for sent in talker.requests) <= CAP * 15 // 100
    refused = next(r for r in responses if r.status_code == 429)
    assert "too few for this request" in refused.json()["error"]
    assert not AITokenReservation.objects.exists()  # every reservation was settled
