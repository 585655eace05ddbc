"""Failures of a model request, in one sentence each, and how they are classified.

``LLMError.kind`` tells the caller what happened (``RETRYABLE`` kinds may succeed if tried
again); ``str()`` is fit for a participant; ``detail`` (status, a snippet of the body) is for
researchers and never holds the API key: bodies are redacted before they get here.
"""

from __future__ import annotations

import logging
import time
from email.utils import parsedate_to_datetime
from typing import Literal

import httpx

logger = logging.getLogger(__name__)

ErrorKind = Literal[
    "config",
    "auth",
    "not_found",
    "bad_request",
    "rate_limited",
    "server",
    "timeout",
    "connection",
    "context_length",
    "cut_off",
    "unreadable",
]
RETRYABLE: frozenset[str] = frozenset(
    {"rate_limited", "server", "timeout", "connection", "cut_off"}
)
_STATUS_MESSAGES = {
    400: "The AI provider rejected the request (HTTP 400).",
    401: "The AI provider refused the platform's API key (HTTP 401).",
    403: "The AI provider refused access for the platform's API key (HTTP 403).",
    404: "The AI provider does not know this endpoint or model (HTTP 404).",
    429: "The AI provider is rate-limiting requests (HTTP 429); please try again in a moment.",
}
_STATUS_KINDS: dict[int, ErrorKind] = {
    401: "auth",
    403: "auth",
    404: "not_found",
    408: "timeout",
    429: "rate_limited",
}
CONTEXT_WORDS = ("context length", "maximum context", "context window", "too many tokens")


class LLMError(Exception):
    """The request failed. ``str(exc)`` is one sentence fit for a participant; ``detail`` is for
    researchers (status, a snippet of the body) and never contains the API key."""

    def __init__(
        self,
        message: str,
        *,
        kind: ErrorKind,
        detail: str = "",
        retry_after: float | None = None,
        retries: int = 0,
        latency_ms: int = 0,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.detail = detail
        self.retry_after = retry_after
        self.retries = retries
        self.latency_ms = latency_ms

    @property
    def retryable(self) -> bool:
        return self.kind in RETRYABLE


def redact(text: str, key: str) -> str:
    return text.replace(key, "[redacted]") if key else text


def config_error(missing: str, detail: str = "") -> LLMError:
    return LLMError(
        f"The AI provider is not configured ({missing}); please tell the research team.",
        kind="config",
        detail=detail,
    )


def retry_after(headers: httpx.Headers) -> float | None:
    """``retry-after-ms`` (OpenAI) or ``retry-after``: seconds, or an HTTP date."""
    if (millis := headers.get("retry-after-ms")) is not None:
        try:
            return float(millis) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def status_error(response: httpx.Response, body: str) -> LLMError:
    status = response.status_code
    kind = _STATUS_KINDS.get(status) or ("server" if status >= 500 else "bad_request")
    message = _STATUS_MESSAGES.get(status)
    if status in (400, 413) and any(word in body.lower() for word in CONTEXT_WORDS):
        kind = "context_length"
        message = f"The conversation is longer than the model's context (HTTP {status})."
    if message is None:
        message = (
            f"The AI provider had an internal error (HTTP {status})."
            if status >= 500
            else f"The AI provider refused the request (HTTP {status})."
        )
    detail = f"HTTP {status}: {body}"
    logger.warning("AI provider error: %s", detail)
    return LLMError(message, kind=kind, detail=detail, retry_after=retry_after(response.headers))


def unreadable(detail: str) -> LLMError:
    return LLMError(
        "The AI provider sent a reply the platform could not read.",
        kind="unreadable",
        detail=detail[:500],
    )


def cut_off(detail: str, latency_ms: int = 0) -> LLMError:
    return LLMError(
        "The AI provider's reply was cut off before it finished.",
        kind="cut_off",
        detail=detail,
        latency_ms=latency_ms,
    )
