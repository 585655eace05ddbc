"""Shared argument handling for the engine's management commands."""

from __future__ import annotations

from django.core.management.base import CommandError

from evaluation.bank import BankError
from evaluation.instances import get_instance
from evaluation.sandbox import get_sandbox
from evaluation.sandbox.base import Sandbox, SandboxUnavailable
from evaluation.spec import Instance


def usage_error(message: str) -> CommandError:
    """A usage error: one sentence, exit code 2."""
    return CommandError(message, returncode=2)


def load_instance(slug: str, seed: int) -> Instance:
    if seed < 0:
        raise usage_error(f"--seed must be a non-negative integer, got {seed}.")
    try:
        return get_instance(slug, seed)
    except BankError as exc:
        raise usage_error(str(exc)) from exc


def open_sandbox() -> Sandbox:
    try:
        return get_sandbox()
    except SandboxUnavailable as exc:
        raise CommandError(f"The sandbox is not available: {exc}") from exc
