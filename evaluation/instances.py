"""Cached access to rendered instances (rendering is deterministic, so caching is safe)."""

from __future__ import annotations

from functools import lru_cache

from evaluation.bank import load_template
from evaluation.instantiate import instantiate
from evaluation.spec import Instance


@lru_cache(maxsize=256)
def get_instance(slug: str, seed: int) -> Instance:
    return instantiate(load_template(slug), seed)
