"""What the LLM arm stores: model endpoints, static datasets, sweeps and their agent runs.

A sweep is a plan of units, one per (instance, sample), all with one endpoint and condition;
each unit is an ``AgentRun`` that an agent works through (``evaluation.llm.agent``). Every
model request of a run is an ``AgentRequest``; every C1 fix is an ``Intervention``.
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from evaluation.llm.keys import validate_key_env
from evaluation.models.engine import Evaluation, Submission, TaskInstance


class ModelEndpoint(models.Model):
    """An OpenAI-compatible model, used by the participants' assistant and by the LLM arm."""

    name = models.SlugField(max_length=100, unique=True, help_text="How sweeps and arms name it.")
    base_url = models.URLField(
        help_text="OpenAI-compatible API base, e.g. https://api.openai.com/v1 (requests go to "
        "BASE/chat/completions)."
    )
    model = models.CharField(max_length=200, help_text="The model id sent with every request.")
    api_key_env = models.CharField(
        max_length=60,
        blank=True,
        validators=[validate_key_env],
        help_text="Name of the environment variable that holds the API key (ending in _KEY or "
        "_TOKEN, not one of the platform's own settings); the key itself is never stored. Empty "
        "for local servers that need none.",
    )
    supports_tools = models.BooleanField(
        default=True,
        help_text="The server accepts `tools` and answers with tool calls. Without it the agent "
        "works from fenced code blocks in plain replies.",
    )
    supports_usage = models.BooleanField(
        default=True,
        help_text="Ask for token usage in streamed replies (stream_options.include_usage); turn "
        "off for servers that reject it. Without it, tokens are estimated and marked so.",
    )
    supports_vision = models.BooleanField(
        default=False,
        help_text="The model takes images: the agent gets the task's diagrams and images as "
        "data URLs. Without it, it gets neither the pictures nor their source.",
    )
    price_input_per_mtok = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        default=Decimal(0),
        validators=[MinValueValidator(Decimal(0))],
        help_text="Price per million prompt tokens (any currency; cost figures use it).",
    )
    price_output_per_mtok = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        default=Decimal(0),
        validators=[MinValueValidator(Decimal(0))],
        help_text="Price per million completion tokens.",
    )
    requests_per_minute = models.PositiveIntegerField(
        default=0,
        help_text="At most this many requests a minute from one process (0: no limit). "
        "A sweep with --jobs J gives each process a J-th of it.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.model})"


class Dataset(models.Model):
    """A static dataset written by ``build_dataset``; its version is the manifest's hash."""

    version = models.CharField(max_length=64, unique=True)
    per_template = models.PositiveIntegerField()
    first_seed = models.BigIntegerField()
    templates = models.JSONField(help_text="slug -> version, content hash, track, difficulty.")
    instances = models.JSONField(help_text="[{template, version, seed, instance_hash}, ...]")
    path = models.CharField(max_length=500, blank=True, help_text="Where it was last written.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"dataset {self.version[:12]} ({len(self.instances)} instances)"


class Sweep(models.Model):
    class Condition(models.TextChoices):
        C0 = "C0", "C0: autonomous"
        C1 = "C1", "C1: minimally intervened"

    class Purpose(models.TextChoices):
        BENCHMARK = "benchmark"
        VALIDATION = "validation"

    key = models.CharField(
        max_length=64,
        unique=True,
        help_text="sha256 of what defines the sweep; running the same sweep again resumes it.",
    )
    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.PROTECT, related_name="sweeps")
    endpoint_settings = models.JSONField(help_text="The endpoint's settings when it started.")
    condition = models.CharField(max_length=2, choices=Condition.choices)
    purpose = models.CharField(max_length=10, choices=Purpose.choices, default=Purpose.BENCHMARK)
    dataset = models.ForeignKey(
        Dataset, null=True, blank=True, on_delete=models.PROTECT, related_name="sweeps"
    )
    templates = models.JSONField(help_text="slug -> template version.")
    samples = models.PositiveIntegerField(validators=[MinValueValidator(1)])
    attempts = models.PositiveIntegerField(
        validators=[MinValueValidator(1)],
        help_text="Visible-test runs allowed per run (the agent's attempts).",
    )
    budget_tokens = models.PositiveIntegerField(
        null=True, blank=True, help_text="Tokens (prompt + completion) allowed per run."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"sweep {self.pk}: {self.endpoint.name} {self.condition}"


class AgentRun(models.Model):
    """One unit of a sweep: an agent's attempt at one instance (sample ``sample``)."""

    class Status(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"  # the agent stopped and its last files were graded
        FAILED = "failed"  # the platform could not finish it (never the model's fault)

    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="runs")
    instance = models.ForeignKey(TaskInstance, on_delete=models.PROTECT, related_name="agent_runs")
    sample = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    stop_reason = models.CharField(
        max_length=20,
        blank=True,
        help_text="Why the agent stopped: submitted, attempts, budget, requests, no_action or "
        "context.",
    )
    attempts_used = models.PositiveIntegerField(
        default=0, help_text="Visible-test runs of the agent's files (what --attempts bounds)."
    )
    model_requests = models.PositiveIntegerField(default=0, help_text="Model requests made.")
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cached_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal(0))
    files = models.JSONField(default=dict, help_text="The editable files the agent left.")
    submission = models.ForeignKey(
        Submission, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    evaluation = models.ForeignKey(
        Evaluation, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    duration_s = models.FloatField(null=True, blank=True)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Last sign of life of the process running it (each step); a running run "
        "silent for an hour is taken over.",
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["sweep", "instance", "sample"], name="uniq_agent_run_unit"
            )
        ]
        ordering = ["sweep", "instance", "sample"]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.instance}, sample {self.sample})"


class AgentRequest(models.Model):
    """One model request of a run, recorded like a participant's assistant request."""

    class Status(models.TextChoices):
        OK = "ok"
        ERROR = "error"

    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="requests")
    index = models.PositiveIntegerField()
    status = models.CharField(max_length=6, choices=Status.choices)
    messages = models.JSONField(help_text="The messages added since the previous request.")
    reply = models.TextField(blank=True)
    tool_calls = models.JSONField(default=list)
    actions = models.JSONField(default=list, help_text="What the harness did with the reply.")
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    cached_tokens = models.PositiveIntegerField(default=0)
    usage_source = models.CharField(max_length=10, blank=True)
    finish_reason = models.CharField(max_length=30, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    retries = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "index"], name="uniq_agent_request_index")
        ]
        ordering = ["run", "index"]

    def __str__(self) -> str:
        return f"request {self.index} of run {self.run_id} ({self.status})"


class Intervention(models.Model):
    """A C1 fix of a procedural failure (the paper's appendix G), never of the logic."""

    class Category(models.TextChoices):
        ENVIRONMENT = "environment", "Environment or command invocation"
        DEPENDENCY = "dependency", "Missing declared dependency"
        PERMISSIONS = "permissions", "File or directory permissions"
        PORTS = "ports", "Port or basic network configuration"
        ENV_VARS = "env_vars", "Missing or incorrect environment variable"

    class Source(models.TextChoices):
        CATALOGUE = "catalogue"
        MANUAL = "manual"

    run = models.ForeignKey(AgentRun, on_delete=models.CASCADE, related_name="interventions")
    category = models.CharField(max_length=12, choices=Category.choices)
    source = models.CharField(max_length=10, choices=Source.choices)
    pattern = models.CharField(max_length=100, blank=True, help_text="The catalogue entry.")
    message = models.TextField(help_text="What the model was told.")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    delivered_at = models.DateTimeField(
        null=True, blank=True, help_text="When the harness gave it to the model."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "created_at"]

    def __str__(self) -> str:
        return f"{self.get_category_display()} ({self.source})"
