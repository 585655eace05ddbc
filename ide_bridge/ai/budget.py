"""The token cap of a trial: what its AI requests spent, what pending ones hold, and the
reservation every request takes before its provider call.

A request reserves its largest possible cost (its prompt, estimated with a margin, plus its
reply budget ``max_tokens``) under the trial's row lock, so requests sent at the same moment
see each other's reservations and cannot all pass the check. Recording the reply replaces the
reservation with the real usage in the same transaction (``drop`` inside it); a failed call
drops it. So a trial spends at most its cap as long as the provider honours ``max_tokens`` and
the prompt estimate holds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import F, Sum
from django.utils import timezone

from ide_bridge.ai.providers import Message
from ide_bridge.ai.providers.base import estimate_prompt_tokens
from ide_bridge.models import AIRequest, AITokenReservation
from study.models import Trial

# The prompt's share of a reservation: the 4-characters-per-token estimate plus a margin, since
# a real tokeniser may count up to ~20 % more (code with many symbols).
PROMPT_RESERVE_FACTOR = 1.25
# A reservation older than this (the process died mid-call) no longer holds tokens; longer
# than the gateway's longest provider timeout.
RESERVATION_TTL = timedelta(minutes=3)


@dataclass(frozen=True)
class Reservation:
    pk: int
    used: int  # tokens the trial's answered requests had spent when it was taken
    max_tokens: int  # the reply's budget


class NoRoom(Exception):
    """Not even a one-token reply fits in what the cap leaves."""

    def __init__(self, cap: int, used: int, held: int, needed: int) -> None:
        super().__init__(f"token cap {cap}: {used} used, {held} held, {needed} needed")
        self.cap, self.used, self.held = cap, used, held

    def for_participant(self) -> str:
        if self.used >= self.cap:
            return f"You have used the {self.cap:,} tokens this task allows for the AI assistant."
        return (
            f"Only {self.cap - self.used:,} of the {self.cap:,} tokens this task allows for the "
            "AI assistant are "
            + ("left, and requests still running hold some of them" if self.held else "left")
            + ": too few for this request."
        )


def tokens_used(trial: Trial) -> int:
    """Prompt + completion tokens of the trial's answered requests plus those its pending
    requests hold (what the cap counts)."""
    return settled_tokens(trial) + held_tokens(trial)


def settled_tokens(trial: Trial) -> int:
    total = AIRequest.objects.filter(trial=trial, status=AIRequest.Status.OK).aggregate(
        total=Sum(F("prompt_tokens") + F("completion_tokens"))
    )["total"]
    return int(total or 0)


def held_tokens(trial: Trial) -> int:
    live = AITokenReservation.objects.filter(
        trial=trial, created_at__gt=timezone.now() - RESERVATION_TTL
    )
    return int(live.aggregate(total=Sum("tokens"))["total"] or 0)


@transaction.atomic
def reserve(trial: Trial, cap: int, conversation: Sequence[Message], max_reply: int) -> Reservation:
    """Reserve the prompt and a reply of up to ``max_reply`` tokens (less when the cap leaves
    less); ``NoRoom`` when not even one reply token fits."""
    prompt = math.ceil(estimate_prompt_tokens(conversation) * PROMPT_RESERVE_FACTOR)
    list(Trial.objects.select_for_update().filter(pk=trial.pk).values_list("pk"))
    used, held = settled_tokens(trial), held_tokens(trial)
    room = cap - used - held - prompt
    if room < 1:
        raise NoRoom(cap, used, held, prompt)
    max_tokens = min(max_reply, room)
    row = AITokenReservation.objects.create(trial=trial, tokens=prompt + max_tokens)
    return Reservation(row.pk, used, max_tokens)


def drop(reservation: Reservation | None) -> None:
    """Release the tokens (in the transaction that records the request: undone with it)."""
    if reservation is not None:
        AITokenReservation.objects.filter(pk=reservation.pk).delete()
