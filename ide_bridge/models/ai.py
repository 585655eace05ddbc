"""Every request through the AI gateway, with its token accounting."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone


class AIRequest(models.Model):
    class Kind(models.TextChoices):
        CHAT = "chat"
        COMPLETE = "complete"
        FEEDBACK = "feedback"  # ELABORATION protocol: feedback in, revised solution.py out

    class Status(models.TextChoices):
        OK = "ok"
        ERROR = "error"  # provider failed or timed out
        REFUSED = "refused"  # arm has no AI, trial closed, or token cap reached

    class UsageSource(models.TextChoices):
        PROVIDER = "provider"
        ESTIMATED = "estimated"

    class Outcome(models.TextChoices):
        SHOWN = "shown"
        ACCEPTED = "accepted"
        REJECTED = "rejected"
        IGNORED = "ignored"

    class Stage(models.TextChoices):
        COMPREHENSION = "comprehension"
        PLANNING = "planning"
        CODING = "coding"
        DEBUGGING = "debugging"

    trial = models.ForeignKey("study.Trial", on_delete=models.CASCADE, related_name="ai_requests")
    suggestion_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OK)
    provider = models.CharField(max_length=20)
    model = models.CharField(max_length=100, blank=True)
    stage = models.CharField(max_length=15, choices=Stage.choices, blank=True)
    messages = models.JSONField(
        default=list, help_text="What was sent (chat messages or prefix/suffix)."
    )
    reply = models.TextField(blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    usage_source = models.CharField(
        max_length=10, choices=UsageSource.choices, default=UsageSource.PROVIDER
    )
    finish_reason = models.CharField(max_length=30, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    outcome = models.CharField(max_length=10, choices=Outcome.choices, blank=True)
    outcome_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["trial", "created_at"]
        indexes = [models.Index(fields=["trial", "kind"], name="airequest_trial_kind")]

    def __str__(self) -> str:
        return f"{self.kind} {self.status} (trial {self.trial_id})"

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class AITokenReservation(models.Model):
    """Tokens held by a request that is waiting for its provider (the cap's side of the
    request: taken under the trial's row lock before the call, replaced by the request's real
    usage when it is recorded, dropped when the call fails). A row older than
    ``gateway.RESERVATION_TTL`` (the process died mid-call) no longer counts."""

    trial = models.ForeignKey(
        "study.Trial", on_delete=models.CASCADE, related_name="ai_token_reservations"
    )
    tokens = models.PositiveIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["trial", "created_at"], name="aireserve_trial_created")]

    def __str__(self) -> str:
        return f"{self.tokens} tokens held (trial {self.trial_id})"
