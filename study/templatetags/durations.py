"""``{% load durations %}``: the ``duration`` filter, seconds as the live monitor shows them.

``{{ seconds|duration }}`` gives ``1 h 02 min`` from one hour on and ``5 min 09 s`` below it
(``None`` and negative values are 0 s). It matches ``hai.formatDuration(seconds, "short")`` in
``static/js/common.js``, which ticks the same cells down between two refreshes of the rows.
"""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def duration(seconds: float | None) -> str:
    total = max(int(seconds or 0), 0)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {secs:02d} s"
