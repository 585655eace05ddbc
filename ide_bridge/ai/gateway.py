"""The AI gateway: the only way from a participant to an LLM.

Every request is authorised against the trial's frozen arm (``study.journey.services.arm_config``)
and state on the server, whatever the browser shows; the client never chooses the model, the
token budget or the provider. Every request, refused ones included, leaves one ``AIRequest``.

The services are async: provider calls (seconds long) run on the event loop through
``httpx.AsyncClient`` and never hold a server thread or a database transaction; the ORM work
around them runs in ``sync_to_async`` blocks, each write in its own ``transaction.atomic``.
(Synchronous views would tie up one worker thread per pending LLM call under daphne.)

The token cap holds under concurrency: before the provider is called, the request reserves its
largest possible cost (``ide_bridge.ai.budget``); recording the reply replaces the reservation
with the real usage in the same transaction, a failed call drops it, and a request that does
not fit in what is left is refused (429).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from asgiref.sync import sync_to_async
from django.db import transaction
from django.utils import timezone

from evaluation.llm.client import EndpointConfig
from ide_bridge.ai import budget
from ide_bridge.ai.chat import chat_conversation
from ide_bridge.ai.feedback import feedback_prompt, revision_target, unified_diff
from ide_bridge.ai.providers import Message, ProviderError, ProviderReply, Purpose, provider_for
from ide_bridge.ai.providers.base import (
    CURSOR,
    extract_code,
    strip_fences,
)
from ide_bridge.models import AIRequest, IntegrityFlag
from study.models import Trial
from study.trials.files import instance_of
from study.trials.services import TrialClosed, arm_config, save_draft

Kind = AIRequest.Kind
Status = AIRequest.Status

# Which arm modes allow which kind of request.
ALLOWED_MODES: dict[str, set[str]] = {
    Kind.CHAT: {"chat", "inline_chat"},
    Kind.COMPLETE: {"inline", "inline_chat"},
    Kind.FEEDBACK: {"feedback"},
}
PURPOSES: dict[str, Purpose] = {
    Kind.CHAT: "chat",
    Kind.COMPLETE: "complete",
    Kind.FEEDBACK: "feedback",
}
# Reply length (tokens) and the whole-reply timeout (seconds) per kind.
MAX_TOKENS: dict[str, int] = {Kind.CHAT: 1024, Kind.COMPLETE: 128, Kind.FEEDBACK: 4096}
TIMEOUT_S: dict[str, float] = {Kind.CHAT: 60.0, Kind.COMPLETE: 10.0, Kind.FEEDBACK: 120.0}
# Inline completion context (RealHumanEval): 6,000 characters, 2/3 before the cursor.
CONTEXT_CHARS = 6000

COMPLETE_SYSTEM = (
    f"You are a Python code completion engine. The user message is a file with the cursor "
    f"marked {CURSOR}. Reply with only the text to insert at the cursor: no explanation, no "
    "code fences, no repetition of the code around the cursor. At most a few lines."
)


class GatewayError(Exception):
    """A refused or failed request; ``str(exc)`` is one sentence for the participant."""

    status = 400


class InvalidRequest(GatewayError):
    status = 400


class NotAllowed(GatewayError):
    status = 403


class UnknownSuggestion(GatewayError):
    status = 404


class TrialNotOpen(GatewayError):
    status = 409


class TokenCapReached(GatewayError):
    status = 429


class ProviderFailed(GatewayError):
    status = 502


@dataclass(frozen=True)
class AISettings:
    ai_mode: str
    model: str
    token_cap: int
    provider: str
    endpoint: EndpointConfig | None

    @classmethod
    def for_trial(cls, trial: Trial) -> AISettings:
        """The participant's frozen condition, the model endpoint's settings included. Where the
        endpoint is served and the key's variable are operations, not the condition: they follow
        the endpoint row while the arm still names it (a moved server, a rotated key)."""
        config, arm = arm_config(trial), trial.arm
        frozen = config.get("ai_endpoint")
        endpoint = EndpointConfig.from_json(frozen) if isinstance(frozen, dict) else None
        live = arm.ai_endpoint
        if endpoint is not None and live is not None and live.name == endpoint.name:
            endpoint = replace(endpoint, base_url=live.base_url, api_key_env=live.api_key_env)
        return cls(
            ai_mode=str(config.get("ai_mode", arm.ai_mode)),
            model=endpoint.model if endpoint else "",
            token_cap=int(config.get("token_cap", arm.token_cap)),
            provider=str(config.get("ai_provider", arm.ai_provider)),
            endpoint=endpoint,
        )


@dataclass(frozen=True)
class AIResult:
    request_id: str  # AIRequest.suggestion_id: links telemetry events and outcomes
    reply: ProviderReply
    tokens_used: int  # by the trial so far, this request included
    token_cap: int
    is_demo: bool
    # Feedback mode only:
    file: str = ""  # the editable file the revision is about
    code: str = ""
    diff: str = ""
    applied: bool = False
    resynced: bool = False  # the client's code differed from the server's; the server's won
    notice: str = ""


@dataclass
class _Request:
    """One request on its way through the gateway."""

    trial: Trial
    kind: str
    stage: str
    conversation: list[Message]
    settings: AISettings = field(init=False)
    reservation: budget.Reservation | None = None  # while the provider call is pending

    @property
    def used(self) -> int:  # tokens of the trial's earlier answered requests
        return self.reservation.used if self.reservation else 0


# --- Services ---------------------------------------------------------------------------------
async def chat(trial: Trial, message: str, stage: str | None = None) -> AIResult:
    """The participant's new message, answered in the conversation the server kept (the
    trial's answered chat requests): the browser never supplies earlier turns, so nothing the
    model did not say reaches it, or the record, as the model's."""
    request = _Request(trial, Kind.CHAT, stage or "", [{"role": "user", "content": message}])
    await _authorise(request)
    request.conversation = await sync_to_async(chat_conversation)(trial, message)
    async with _reserved(request):
        reply, ms = await _call(request)
        return _result(request, await sync_to_async(_record)(request, reply, ms), reply)


async def complete(trial: Trial, prefix: str, suffix: str, file: str | None = None) -> AIResult:
    """An inline completion at the cursor of the active file (``file``, an editable path;
    named to the model with the list of the workspace's files)."""
    before = CONTEXT_CHARS * 2 // 3
    prefix = prefix[-before:]
    suffix = suffix[: CONTEXT_CHARS - len(prefix)]
    system = COMPLETE_SYSTEM + await sync_to_async(_file_context)(trial, file)
    conversation: list[Message] = [
        {"role": "system", "content": system},
        {"role": "user", "content": f"{prefix}{CURSOR}{suffix}"},
    ]
    request = _Request(trial, Kind.COMPLETE, "", conversation)
    await _authorise(request)
    async with _reserved(request):
        reply, ms = await _call(request)
        reply = replace(reply, text=strip_fences(reply.text))
        return _result(request, await sync_to_async(_record)(request, reply, ms), reply)


async def feedback(
    trial: Trial, feedback_text: str, current_code: str | None, stage: str | None
) -> AIResult:
    """ELABORATION protocol: feedback in, one complete revised editable file out (the one the
    model names, else the first: ``feedback.revision_target``), applied on the server. The base
    is the server's draft (or the starter): the editor is read-only, so code the client sends
    (the text of the first editable file) is only compared with it, never used."""
    request = _Request(
        trial, Kind.FEEDBACK, stage or "", [{"role": "user", "content": feedback_text}]
    )
    await _authorise(request)
    files = await sync_to_async(_feedback_conversation)(request, feedback_text)
    editable = list(files)
    async with _reserved(request):
        reply, ms = await _call(request)
        extracted = extract_code(reply.text)
        path, revised = editable[0], None
        if extracted is not None:
            path, revised = revision_target(extracted, editable)
            revised = revised if revised.strip() else None
        request_id, applied, notice = await sync_to_async(_record_revision)(
            request, reply, ms, path, revised
        )
    base = files[path]
    code = revised if applied and revised is not None else base
    return _result(
        request,
        request_id,
        reply,
        file=path,
        code=code,
        diff=unified_diff(base, code, path),
        applied=applied,
        resynced=current_code is not None and current_code != files[editable[0]],
        notice=notice,
    )


@transaction.atomic
def record_outcome(trial: Trial, suggestion_id: str, outcome: str) -> str:
    """What became of an inline suggestion. ``shown`` may be followed by one final outcome
    (accepted, rejected, ignored); the first final outcome wins. Returns the stored outcome.
    Accepted after the trial closed too: it describes a suggestion made while it was open."""
    if outcome not in AIRequest.Outcome.values:
        raise InvalidRequest("outcome must be one of shown, accepted, rejected, ignored.")
    try:
        key = uuid.UUID(str(suggestion_id))
    except ValueError:
        raise UnknownSuggestion("There is no such suggestion in this task.") from None
    rows = AIRequest.objects.filter(
        trial=trial, suggestion_id=key, kind=Kind.COMPLETE, status=Status.OK
    )
    open_states = [""] if outcome == AIRequest.Outcome.SHOWN else ["", AIRequest.Outcome.SHOWN]
    # A conditional UPDATE: a late "shown" never overwrites "accepted", two tabs never race.
    rows.filter(outcome__in=open_states).update(outcome=outcome, outcome_at=timezone.now())
    stored = rows.values_list("outcome", flat=True).first()
    if stored is None:
        raise UnknownSuggestion("There is no such suggestion in this task.")
    return stored


# --- Steps ------------------------------------------------------------------------------------
@sync_to_async
def _authorise(request: _Request) -> None:
    """Arm mode, then trial state; each refusal is recorded (the token cap is ``_reserve``'s)."""
    trial = request.trial
    request.settings = settings = AISettings.for_trial(trial)
    if settings.ai_mode not in ALLOWED_MODES[request.kind]:
        _refuse(request, f"arm mode {settings.ai_mode} does not allow {request.kind}", flag=True)
        raise NotAllowed(
            "The AI assistant is not available for this task."
            if settings.ai_mode == "none"
            else "This kind of AI help is not available for this task."
        )
    if trial.status != Trial.Status.ACTIVE or (
        trial.deadline is not None and timezone.now() > trial.deadline
    ):
        _refuse(request, f"trial is {trial.status}")
        raise TrialNotOpen(
            "This task has not started yet."
            if trial.status == Trial.Status.PENDING
            else "This task is closed; the AI assistant is no longer available."
        )


@asynccontextmanager
async def _reserved(request: _Request) -> AsyncIterator[None]:
    """Hold the request's largest cost for the duration of the block; refuse (429, recorded)
    when the cap leaves too little."""
    try:
        request.reservation = await sync_to_async(budget.reserve)(
            request.trial,
            request.settings.token_cap,
            request.conversation,
            MAX_TOKENS[request.kind],
        )
    except budget.NoRoom as exc:
        await sync_to_async(_refuse)(request, str(exc))
        raise TokenCapReached(exc.for_participant()) from None
    try:
        yield
    finally:  # recording the reply already dropped it; this covers every other way out
        await sync_to_async(budget.drop)(request.reservation)


@transaction.atomic
def _refuse(request: _Request, reason: str, *, flag: bool = False) -> None:
    row = _create(request, Status.REFUSED, error=reason)
    if flag:
        IntegrityFlag.objects.create(
            trial=request.trial,
            kind=IntegrityFlag.Kind.AI_ATTEMPT,
            detail={
                "request": request.kind,
                "ai_mode": request.settings.ai_mode,
                "id": str(row.suggestion_id),
            },
        )


async def _call(request: _Request) -> tuple[ProviderReply, int]:
    """The provider's reply and its latency in milliseconds; a failure is recorded."""
    settings = request.settings
    started = time.monotonic()
    try:
        provider = provider_for(settings.provider, settings.endpoint)
        reply = await provider.complete_chat(
            request.conversation,
            model=settings.model,
            max_tokens=request.reservation.max_tokens if request.reservation else 1,
            timeout=TIMEOUT_S[request.kind],
            purpose=PURPOSES[request.kind],
        )
    except ProviderError as exc:
        error = f"{exc} ({exc.detail})" if exc.detail else str(exc)
        await sync_to_async(_record_error)(request, error, _ms_since(started))
        raise ProviderFailed(str(exc)) from None
    return reply, _ms_since(started)


def _ms_since(started: float) -> int:
    return round((time.monotonic() - started) * 1000)


def _create(request: _Request, status: str, **fields: Any) -> AIRequest:
    fields.setdefault("model", request.settings.model)
    return AIRequest.objects.create(
        trial=request.trial,
        kind=request.kind,
        status=status,
        provider=request.settings.provider,
        stage=request.stage,
        messages=request.conversation,
        **fields,
    )


@transaction.atomic
def _record_error(request: _Request, error: str, latency_ms: int) -> None:
    _create(request, Status.ERROR, latency_ms=latency_ms, error=error)
    budget.drop(request.reservation)


@transaction.atomic
def _record(request: _Request, reply: ProviderReply, latency_ms: int, error: str = "") -> str:
    """Store the reply with its real usage, which replaces the reservation (one transaction)."""
    budget.drop(request.reservation)
    row = _create(
        request,
        Status.OK,
        model=reply.model or request.settings.model,
        reply=reply.text,
        prompt_tokens=reply.prompt_tokens,
        completion_tokens=reply.completion_tokens,
        usage_source=reply.usage_source,
        finish_reason=reply.finish_reason[:30],
        latency_ms=latency_ms,
        error=error,
    )
    return str(row.suggestion_id)


def _result(request: _Request, request_id: str, reply: ProviderReply, **extra: Any) -> AIResult:
    return AIResult(
        request_id=request_id,
        reply=reply,
        tokens_used=request.used + reply.prompt_tokens + reply.completion_tokens,
        token_cap=request.settings.token_cap,
        is_demo=request.settings.provider == "demo",
        **extra,
    )


def _file_context(trial: Trial, file: str | None) -> str:
    """The active file and the workspace's other files, for the completion prompt ("" for an
    unknown path or a one-file task)."""
    instance = instance_of(trial)
    if file is None or file not in instance.editable or len(instance.participant_files) < 2:
        return ""
    others = sorted({*instance.participant_files, *instance.images} - {file})
    return f"\nThe file is {file}; the workspace also has: {', '.join(others)}."


# --- Feedback mode ----------------------------------------------------------------------------
def _feedback_conversation(request: _Request, feedback_text: str) -> dict[str, str]:
    """Put the model's input into ``request.conversation``; return the editable files it may
    revise (path -> current text)."""
    files, request.conversation = feedback_prompt(request.trial, request.stage, feedback_text)
    return files


def _record_revision(
    request: _Request, reply: ProviderReply, latency_ms: int, path: str, revised: str | None
) -> tuple[str, bool, str]:
    """Record the reply and apply the revision in one transaction. A reply without usable code
    is recorded (its tokens count) and shown, but changes nothing."""
    if revised is None:
        notice = "The assistant did not return a complete file, so nothing was changed."
        return _record(request, reply, latency_ms, "no code in the reply"), False, notice
    try:
        with transaction.atomic():
            request_id = _record(request, reply, latency_ms)
            save_draft(request.trial, {path: revised}, timezone.now())
    except TrialClosed as exc:
        _record(request, reply, latency_ms, f"not applied: {exc}")
        raise TrialNotOpen(str(exc)) from None
    except ValueError as exc:  # larger than the draft size limit
        return _record(request, reply, latency_ms, f"not applied: {exc}"), False, str(exc)
    return request_id, True, ""
