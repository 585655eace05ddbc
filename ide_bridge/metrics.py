"""The IDE bridge's per-trial numbers for the study layer (see ``study.metrics``).

``register()`` is called once from ``IdeBridgeConfig.ready()``. Each provider answers for a
list of trials with a single aggregate query.
"""

from __future__ import annotations

from django.db.models import Count, F, Q, Sum

from ide_bridge.models import AIRequest, IntegrityFlag
from study.metrics import register_trial_flags, register_trial_metrics

OK = AIRequest.Status.OK


def ai_metrics(trial_ids: list[int]) -> dict[int, dict[str, float]]:
    """Tokens (prompt + completion of successful requests: what the token cap counts) and
    request counts per trial."""
    rows = (
        AIRequest.objects.filter(trial_id__in=trial_ids)
        .order_by()
        .values("trial_id")
        .annotate(
            tokens=Sum(F("prompt_tokens") + F("completion_tokens"), filter=Q(status=OK)),
            ai_requests=Count("pk", filter=Q(status=OK)),
            ai_requests_refused=Count("pk", filter=Q(status=AIRequest.Status.REFUSED)),
            ai_requests_failed=Count("pk", filter=Q(status=AIRequest.Status.ERROR)),
        )
    )
    return {
        row["trial_id"]: {
            "tokens": float(row["tokens"] or 0),
            "ai_requests": float(row["ai_requests"]),
            "ai_requests_refused": float(row["ai_requests_refused"]),
            "ai_requests_failed": float(row["ai_requests_failed"]),
        }
        for row in rows
    }


def integrity_flags(trial_ids: list[int]) -> dict[int, dict[str, int]]:
    rows = (
        IntegrityFlag.objects.filter(trial_id__in=trial_ids)
        .order_by()
        .values("trial_id", "kind")
        .annotate(n=Count("pk"))
    )
    flags: dict[int, dict[str, int]] = {}
    for row in rows:
        flags.setdefault(row["trial_id"], {})[row["kind"]] = row["n"]
    return flags


def register() -> None:
    register_trial_metrics("ai", ai_metrics)
    register_trial_flags(integrity_flags)
