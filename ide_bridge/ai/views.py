"""JSON endpoints of the AI gateway: chat, inline completion, feedback and suggestion outcomes.

Async views (LLM calls take seconds; daphne serves them without holding a thread). They parse,
load the trial through ``study.access`` and call ``ide_bridge.ai.gateway``. Errors are
``{"error": "..."}``: 400 bad JSON or fields, 401 signed out, 403 the arm does not allow this
kind of AI help (logged as an integrity flag), 404 not your trial or suggestion, 409 trial not
open, 429 token cap reached, 502 the provider failed. CSRF is Django's (``X-CSRFToken``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from functools import wraps
from typing import Any

from asgiref.sync import sync_to_async
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_POST

from ide_bridge.ai import gateway
from ide_bridge.ai.gateway import AIResult, GatewayError, InvalidRequest
from ide_bridge.http import RequestError, async_participant_endpoint, json_error, read_json_object
from ide_bridge.models import AIRequest
from study.models import Trial

MAX_MESSAGE_CHARS = 16_000
MAX_FEEDBACK_CHARS = 8_000
MAX_CODE_CHARS = 300_000
MAX_BODY_BYTES = 2 * 1024 * 1024  # the largest field (code) plus JSON escaping

Body = dict[str, Any]
AIView = Callable[[Trial, Body], Awaitable[Body]]


def ai_endpoint(view: AIView) -> Callable[[HttpRequest, int], Coroutine[Any, Any, JsonResponse]]:
    @require_POST
    @async_participant_endpoint
    @wraps(view)
    async def wrapper(request: HttpRequest, trial: Trial) -> JsonResponse:
        try:
            body = read_json_object(
                request, max_bytes=MAX_BODY_BYTES, too_large="The request is too large."
            )
        except RequestError as exc:  # the gateway's error statuses: bad requests are 400
            raise RequestError(str(exc), 400) from None
        # Shielded: when the browser gives up (a newer keystroke cancels a completion),
        # Django cancels the view, but the provider call still finishes and is recorded,
        # so the tokens it cost count against the cap.
        task = asyncio.ensure_future(view(trial, body))
        task.add_done_callback(_retrieve)
        try:
            return JsonResponse(await asyncio.shield(task))
        except GatewayError as exc:
            return json_error(str(exc), exc.status)

    return wrapper


def _retrieve(task: asyncio.Future[Body]) -> None:
    """Mark an abandoned request's exception as seen (it was recorded or is a refusal)."""
    if not task.cancelled():
        task.exception()


def _text(data: Body, key: str, limit: int) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequest(f'"{key}" must be a non-empty string.')
    if len(value) > limit:
        raise InvalidRequest(f'"{key}" is too long (at most {limit:,} characters).')
    return value


def _stage(data: Body) -> str | None:
    stage = data.get("stage") or None
    if stage is not None and stage not in AIRequest.Stage.values:
        raise InvalidRequest('"stage" must be one of comprehension, planning, coding, debugging.')
    return stage


def _chat_message(data: Body) -> str:
    """``{"message": "..."}``: only the new turn. The server keeps the conversation, so a body
    with earlier turns (``messages``, which could put words in the model's mouth) is a 400."""
    if "messages" in data:
        raise InvalidRequest(
            'Send only your new message as "message": the server keeps the conversation, '
            "so earlier turns are not accepted."
        )
    return _text(data, "message", MAX_MESSAGE_CHARS)


def _usage(result: AIResult) -> Body:
    reply = result.reply
    return {
        "id": result.request_id,
        "model": reply.model,
        "demo": result.is_demo,
        "usage": {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "source": reply.usage_source,
        },
        "tokens_used": result.tokens_used,
        "token_cap": result.token_cap,
    }


@ai_endpoint
async def chat(trial: Trial, data: Body) -> Body:
    result = await gateway.chat(trial, _chat_message(data), _stage(data))
    return {"reply": result.reply.text, **_usage(result)}


@ai_endpoint
async def complete(trial: Trial, data: Body) -> Body:
    prefix, suffix = data.get("prefix"), data.get("suffix", "")
    if not isinstance(prefix, str) or not isinstance(suffix, str):
        raise InvalidRequest('"prefix" and "suffix" must be strings.')
    file = data.get("file")
    if file is not None and not isinstance(file, str):
        raise InvalidRequest('"file" must be the path of the file being edited.')
    if len(prefix) + len(suffix) > MAX_CODE_CHARS:
        raise InvalidRequest("The code around the cursor is too long.")
    result = await gateway.complete(trial, prefix, suffix, file)
    return {"suggestion_id": result.request_id, "text": result.reply.text, **_usage(result)}


@ai_endpoint
async def feedback(trial: Trial, data: Body) -> Body:
    text = _text(data, "feedback", MAX_FEEDBACK_CHARS)
    code = data.get("code")
    if code is not None and not isinstance(code, str):
        raise InvalidRequest('"code" must be a string.')
    result = await gateway.feedback(trial, text, code, _stage(data))
    return {
        "reply": result.reply.text,
        "file": result.file,
        "code": result.code,
        "diff": result.diff,
        "applied": result.applied,
        "resynced": result.resynced,
        "notice": result.notice,
        **_usage(result),
    }


@ai_endpoint
async def outcome(trial: Trial, data: Body) -> Body:
    suggestion_id = _text(data, "suggestion_id", 64)
    stored = await sync_to_async(gateway.record_outcome)(
        trial, suggestion_id, str(data.get("outcome", ""))
    )
    return {"suggestion_id": suggestion_id, "outcome": stored}
