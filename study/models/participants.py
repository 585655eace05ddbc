"""Anonymous participants and their one-time personal login links."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Participant(models.Model):
    """One person in one study, known only by a random pseudonym.

    Contact and compensation data never live here: they are in the encrypted vault, linked
    by ``internal_id`` on the vault side only.
    """

    class Stage(models.TextChoices):
        INVITED = "invited"
        CONSENTED = "consented"
        SCREENED = "screened"
        ASSIGNED = "assigned"
        IN_SESSION = "in_session"
        WAITING = "waiting"
        POST_STUDY = "post_study"
        COMPLETE = "complete"
        DECLINED = "declined"
        WITHDRAWN = "withdrawn"
        EXCLUDED = "excluded"

    study = models.ForeignKey("study.Study", on_delete=models.PROTECT, related_name="participants")
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="participant"
    )
    internal_id = models.CharField(max_length=16, unique=True, editable=False)
    snapshot = models.ForeignKey(
        "study.ConfigSnapshot",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="participants",
        help_text="The configuration this participant sees.",
    )
    stage = models.CharField(max_length=12, choices=Stage.choices, default=Stage.INVITED)
    track = models.ForeignKey(
        "study.Track", null=True, blank=True, on_delete=models.PROTECT, related_name="participants"
    )
    track_overridden = models.BooleanField(default=False)
    session_index = models.PositiveSmallIntegerField(
        default=0, help_text="The session the participant is in or waiting for (1-based)."
    )
    next_session_opens_at = models.DateTimeField(null=True, blank=True)
    next_session_closes_at = models.DateTimeField(null=True, blank=True)
    exclusion_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_activity_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            # The monitor and the balancing counts filter participants of a study by stage.
            models.Index(fields=["study", "stage"], name="participant_study_stage"),
        ]
        ordering = ["study", "created_at"]

    def __str__(self) -> str:
        return self.user.username

    @property
    def is_active(self) -> bool:
        return self.stage not in {
            self.Stage.COMPLETE,
            self.Stage.DECLINED,
            self.Stage.WITHDRAWN,
            self.Stage.EXCLUDED,
        }


class LoginLink(models.Model):
    """A one-time personal login link. Only a hash of the token is stored."""

    participant = models.ForeignKey(Participant, on_delete=models.CASCADE, related_name="links")
    token_sha256 = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"link for {self.participant} ({'used' if self.used_at else 'unused'})"
