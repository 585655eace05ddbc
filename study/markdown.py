"""Safe Markdown rendering for researcher-written text (consent forms, questionnaire intros).

Raw HTML in the source is disabled, so a researcher (or a compromised researcher account)
cannot inject scripts or styles into participant pages: ``<script>`` is shown as text.
markdown-it's link validation already refuses ``javascript:``, ``vbscript:`` and most
``data:`` URLs. The output is deterministic for a given input, which lets consent events
hash exactly what was shown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

__all__ = ["render_markdown"]


def _table_open(
    self: RendererHTML,
    tokens: Sequence[Token],
    idx: int,
    options: OptionsDict,
    env: EnvType,
) -> str:
    tokens[idx].attrSet("class", "table table-sm")
    return self.renderToken(tokens, idx, options, env)


def _link_open(
    self: RendererHTML,
    tokens: Sequence[Token],
    idx: int,
    options: OptionsDict,
    env: EnvType,
) -> str:
    href = str(tokens[idx].attrGet("href") or "")
    if href.startswith(("http://", "https://")):
        # External links open in a new tab so a participant never loses a half-filled page.
        tokens[idx].attrSet("target", "_blank")
        tokens[idx].attrSet("rel", "noopener noreferrer")
    return self.renderToken(tokens, idx, options, env)


def _build() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    renderer: Any = md.renderer
    renderer.rules["table_open"] = _table_open.__get__(renderer)
    renderer.rules["link_open"] = _link_open.__get__(renderer)
    return md


_MD = _build()


def render_markdown(text: str | None) -> SafeString:
    """Render ``text`` (CommonMark + tables) to HTML that is safe to insert unescaped."""
    return mark_safe(_MD.render(text or ""))  # noqa: S308 - raw HTML is disabled above
