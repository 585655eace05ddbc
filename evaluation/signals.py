"""Signals the study layer subscribes to (the engine never imports it).

``evaluation_progress``: sender=Evaluation class, ``evaluation_id``, ``done``, ``total``.
``evaluation_finished``: sender=Evaluation class, ``evaluation_id``, ``status``.
Both are sent after the database change is committed.
"""

from __future__ import annotations

from django.dispatch import Signal

evaluation_progress = Signal()
evaluation_finished = Signal()
