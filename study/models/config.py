"""Study configuration: what researchers set up in the admin, and its frozen snapshots."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models


class Study(models.Model):
    class BalancePriority(models.TextChoices):
        USES = "uses", "Balance task uses first, then match difficulty within each participant"
        DIFFICULTY = (
            "difficulty",
            "Match difficulty within each participant first (uses may be uneven)",
        )

    class SequenceSet(models.TextChoices):
        BALANCED = (
            "balanced",
            "Every session balanced, sessions combined freely (ABBA, BAAB, ABAB, BABA)",
        )
        MIRRORED = (
            "mirrored",
            "Each session mirrors the one before (ABBA, BAAB: the textbook crossover)",
        )

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft (being configured)"
        RECRUITING = "recruiting", "Recruiting"
        CLOSED = "closed", "Closed"

    class ReleasePolicy(models.TextChoices):
        IMMEDIATELY = "immediately", "Immediately after grading"
        AFTER_SESSION = "after_session", "After the participant's session ends"
        STUDY_END = "study_end", "When the study is closed"
        NEVER = "never", "Never (researchers only)"

    class WithdrawalPolicy(models.TextChoices):
        KEEP = "keep", "Keep data collected so far"
        DELETE = "delete", "Delete the participant's research data"

    slug = models.SlugField(unique=True, help_text="Short id used in links and exports.")
    title = models.CharField(max_length=200)
    description = models.TextField(
        blank=True, help_text="Shown to participants on the welcome page."
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.DRAFT)
    contact = models.CharField(
        max_length=300, blank=True, help_text="How participants reach the research team."
    )
    # Session plan
    sessions = models.PositiveSmallIntegerField(
        default=2, validators=[MinValueValidator(1), MaxValueValidator(4)]
    )
    trials_per_session = models.PositiveSmallIntegerField(
        default=2, validators=[MinValueValidator(1), MaxValueValidator(6)]
    )
    gap_hours = models.PositiveSmallIntegerField(
        default=24, help_text="Hours between the end of one session and the start of the next."
    )
    window_hours = models.PositiveSmallIntegerField(
        default=2, help_text="The next session may start this many hours before or after the gap."
    )
    # Instruments
    consent_form = models.ForeignKey(
        "study.ConsentForm",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The consent version participants must accept now. Changing it asks active "
        "participants to consent again.",
    )
    screening = models.ForeignKey(
        "study.QuestionnaireVersion",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Pre-study screening questionnaire (decides the track).",
    )
    post_trial = models.ForeignKey(
        "study.QuestionnaireVersion",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Asked after every trial.",
    )
    post_study = models.ForeignKey(
        "study.QuestionnaireVersion",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Asked once after the last trial.",
    )
    track_item_key = models.CharField(
        max_length=60,
        default="track_preference",
        blank=True,
        help_text="Screening item whose answer (a track code) decides the track; empty, no "
        "preference or an unknown track: the track furthest below its target.",
    )
    # Policies
    report_release = models.CharField(
        max_length=16, choices=ReleasePolicy.choices, default=ReleasePolicy.AFTER_SESSION
    )
    withdrawal_policy = models.CharField(
        max_length=8, choices=WithdrawalPolicy.choices, default=WithdrawalPolicy.KEEP
    )
    allow_unvalidated_templates = models.BooleanField(
        default=False,
        help_text="Off (the default): recruitment opens only when the current version of every "
        "active task-pool template passed validation (manage.py validate_templates). On: "
        "unvalidated templates are allowed too, for pilots; their results are not the paper's "
        "evidence. Rejected and compromised templates are never allowed.",
    )
    replace_session2_no_shows = models.BooleanField(
        default=True,
        help_text="Release the plan of a participant who misses session 2 so a newcomer gets it.",
    )
    balance_priority = models.CharField(
        max_length=10,
        choices=BalancePriority.choices,
        default=BalancePriority.USES,
        help_text="When the pool's difficulties cannot be matched within every participant "
        "without some tasks being used more than others, which comes first. Balancing uses "
        "keeps the difficulty gap between the conditions as small as exact balance allows.",
    )
    sequence_set = models.CharField(
        max_length=10,
        choices=SequenceSet.choices,
        default=SequenceSet.BALANCED,
        help_text="Which condition orders participants get. Both sets hold every condition "
        "equally often in every session; orders such as AABB, which confound the condition "
        "with the session, are never used.",
    )
    expected_dropout = models.FloatField(
        default=0.15,
        validators=[MinValueValidator(0.0), MaxValueValidator(0.9)],
        help_text="Share of participants expected to drop out (0 to 0.9); the design check at "
        "recruitment opening simulates the allocation with it.",
    )
    target_participants = models.PositiveIntegerField(
        default=45,
        help_text="Participants who should complete the study. Tracks without a target of "
        "their own share what the others leave of it equally (the remainder goes to the first "
        "tracks by code).",
    )
    overbooking = models.PositiveIntegerField(
        default=5, help_text="Participants assigned beyond the target before assignment stops."
    )
    recruitment_token = models.CharField(
        max_length=32,
        blank=True,
        help_text=(
            "Set to enable the public recruitment link /study/enrolment/join/<token>/; "
            "empty disables."
        ),
    )
    recruitment_id_param = models.CharField(
        max_length=40,
        default="PROLIFIC_PID",
        blank=True,
        help_text="URL parameter of the recruitment link with an external id (kept in the vault).",
    )
    config_version = models.PositiveIntegerField(
        default=0, editable=False, help_text="Newest configuration snapshot version."
    )
    researchers = models.ManyToManyField(
        "study.User",
        blank=True,
        related_name="studies",
        help_text="Researchers who may see and manage this study (superusers see every study).",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "studies"
        permissions = [("view_vault", "Can read the contact and compensation vault")]

    def __str__(self) -> str:
        return self.title

    @property
    def total_trials(self) -> int:
        return self.sessions * self.trials_per_session


class Track(models.Model):
    class Code(models.TextChoices):
        SDE = "SDE", "Software development engineering"
        MLE = "MLE", "Machine learning engineering"
        DS = "DS", "Data science"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="tracks")
    code = models.CharField(max_length=3, choices=Code.choices)
    target_participants = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Participants this track should end with (exact balance aims at it). Empty: "
        "an equal share of what the tracks with their own target leave of the study's target.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "code"], name="uniq_track_per_study")
        ]
        ordering = ["code"]

    def __str__(self) -> str:
        return f"{self.study.slug}/{self.code}"


def all_submission_channels() -> list[str]:
    """The default of ``Arm.submission_channels``: every channel (not feedback-only arms)."""
    return [channel.value for channel in Arm.Channel]


class Arm(models.Model):
    """A condition: a named setting of the work environment."""

    class Channel(models.TextChoices):
        """The ways code reaches a trial's submission."""

        EDITOR = "editor", "In-browser editor (its autosave, test runs and submit)"
        UPLOAD = "upload", "Upload page (the participant uploads their editable files)"
        SCRIPT = "script", "Submit script (a workspace archive, e.g. from Codespaces)"

    class AIMode(models.TextChoices):
        NONE = "none", "No AI"
        INLINE = "inline", "Inline completions"
        CHAT = "chat", "Chat"
        INLINE_CHAT = "inline_chat", "Inline completions and chat"
        FEEDBACK = "feedback", "Feedback only (ELABORATION protocol)"

    class IDE(models.TextChoices):
        BROWSER = "browser", "In-browser editor"
        CODESPACES = "codespaces", "GitHub Codespaces"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="arms")
    condition = models.CharField(
        max_length=1, help_text="Letter used in condition sequences: A = no AI, B = AI."
    )
    name = models.CharField(max_length=100)
    ai_mode = models.CharField(max_length=12, choices=AIMode.choices, default=AIMode.NONE)
    ide = models.CharField(max_length=12, choices=IDE.choices, default=IDE.BROWSER)
    time_limit_min = models.PositiveSmallIntegerField(
        default=60, validators=[MinValueValidator(1), MaxValueValidator(600)]
    )
    ai_provider = models.CharField(
        max_length=10,
        choices=[
            ("demo", "Offline demo assistant"),
            ("endpoint", "A model endpoint"),
        ],
        default="demo",
        help_text="Where AI requests go. The demo assistant works offline and says it is a demo; "
        "a model endpoint is a real model (OpenAI-compatible chat completions).",
    )
    ai_endpoint = models.ForeignKey(
        "evaluation.ModelEndpoint",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="The model the assistant uses when the provider is a model endpoint "
        "(configured, and tested, under Evaluation > Model endpoints). Participants keep the "
        "model, flags and prices frozen when they consented; its base URL and key variable "
        "follow the endpoint.",
    )
    token_cap = models.PositiveIntegerField(
        default=100_000, help_text="Maximum LLM tokens per trial (prompt + completion)."
    )
    submission_channels = models.JSONField(
        default=all_submission_channels,
        help_text="How code may reach a trial's submission; the others are refused with a "
        "message. A feedback-only arm may allow only the in-browser editor, the one channel "
        "that carries code the assistant wrote (its editor is read-only). The last saved code "
        "is still submitted when the time runs out.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "condition"], name="uniq_arm_condition"),
        ]
        ordering = ["condition"]

    def __str__(self) -> str:
        return f"{self.condition}: {self.name}"

    @property
    def has_ai(self) -> bool:
        return self.ai_mode != self.AIMode.NONE

    def clean(self) -> None:
        errors: dict[str, list[str]] = {}
        if problems := self.channel_problems():
            errors["submission_channels"] = problems
        if problems := self.endpoint_problems():
            errors["ai_endpoint"] = problems
        if errors:
            raise ValidationError(errors)

    def endpoint_problems(self) -> list[str]:
        if self.ai_provider == "endpoint" and self.ai_endpoint_id is None:
            return ["Choose the model endpoint this arm's assistant uses."]
        return []

    def channel_problems(self) -> list[str]:
        """What is wrong with ``submission_channels``, in words a researcher can act on."""
        channels = self.submission_channels
        if not isinstance(channels, list) or not channels:
            return ["Allow at least one submission channel."]
        unknown = sorted({str(c) for c in channels} - set(self.Channel.values))
        if unknown:
            return [
                f"Unknown submission channel(s): {', '.join(unknown)} (choose from "
                f"{', '.join(self.Channel.values)})."
            ]
        if self.ai_mode == self.AIMode.FEEDBACK and set(channels) - MODEL_WRITTEN_CHANNELS:
            return [
                "A feedback-only arm may allow only the in-browser editor: on the upload page "
                "and with the submit script participants would hand in code the assistant did "
                "not write."
            ]
        return []


# The channels that carry only code the assistant wrote in a feedback-only arm: its in-browser
# editor is read-only and every change is a revision applied on the server.
MODEL_WRITTEN_CHANNELS = frozenset({Arm.Channel.EDITOR.value})


class TaskPoolEntry(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="pool")
    track = models.ForeignKey(Track, on_delete=models.CASCADE, related_name="pool")
    template_slug = models.SlugField(max_length=100, help_text="A template from the task bank.")
    difficulty = models.CharField(max_length=6, editable=False, help_text="From the template.")
    active = models.BooleanField(default=True)
    cross_track = models.BooleanField(
        default=False,
        help_text="Allow a template of another track in this track's pool. Participants of "
        "this track then get a task written for another track; the study's page warns about it.",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["study", "track", "template_slug"], name="uniq_pool_template"
            )
        ]
        verbose_name_plural = "task pool entries"

    def __str__(self) -> str:
        return f"{self.template_slug} ({self.difficulty})"


class ConfigSnapshot(models.Model):
    """The configuration as participants saw it; frozen and hashed. Never edited."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="snapshots")
    version = models.PositiveIntegerField()
    content = models.JSONField()
    sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "version"], name="uniq_snapshot_version")
        ]
        ordering = ["-version"]

    def __str__(self) -> str:
        return f"{self.study.slug} v{self.version} ({self.sha256[:10]})"
