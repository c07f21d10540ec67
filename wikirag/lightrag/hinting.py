"""How the hint reaches LightRAG's extraction: a wrapper around the LLM function that finds the chunk inside
LightRAG's extraction (or gleaning) prompt and puts its note's hint just before the input text. The stored
chunk stays the note's own text; only the prompt carries the hint, so LightRAG's cache keys and rebuilds
stay consistent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from wikirag.errors import WikiragError
from wikirag.lightrag.bindings import prompt_openings
from wikirag.lightrag.guard import import_lightrag

_INPUT_FENCE = "---Input Text---\n```\n"
_INPUT_TEXT = re.compile(r"---Input Text---\n```\n(.*)\n```", re.S)


def input_text(prompt: str) -> str | None:
    """The chunk text inside LightRAG's extraction prompt, or None for other prompts."""
    match = _INPUT_TEXT.search(prompt)
    return match.group(1) if match else None


def with_hint(prompt: str, hint: str) -> str:
    return prompt.replace(_INPUT_FENCE, hint + _INPUT_FENCE, 1)


class HintingLLM:
    """Wraps an LLM function: extraction and gleaning prompts for a known chunk get its note's hint.

    `hints` maps chunk text -> hint; the pipeline fills it before extracting a note's chunks.
    """

    def __init__(self, llm_func: Callable[..., Any]) -> None:
        self.llm_func = llm_func
        self.hints: dict[str, str] = {}
        self._holders: dict[str, int] = {}  # extractions running concurrently may share a text
        self.calls = 0
        self.hinted = 0  # extraction and gleaning prompts that went out with their hint
        self.usage: Any = None  # llm.LLMUsage when the function is a configured provider

    def __deepcopy__(self, memo: dict) -> HintingLLM:
        # LightRAG deep-copies its dataclass fields into a config dict; the wrapper is shared state (the
        # hints the pipeline sets, the wrapped client's connections), so every copy must be this object.
        return self

    def hold(self, text: str, hint: str) -> None:
        """Show `hint` with `text` until as many `release(text)` calls (concurrent extractions of identical
        text must not take each other's hint away)."""
        self.hints[text] = hint
        self._holders[text] = self._holders.get(text, 0) + 1

    def release(self, text: str) -> None:
        left = self._holders.get(text, 0) - 1
        if left > 0:
            self._holders[text] = left
        else:
            self._holders.pop(text, None)
            self.hints.pop(text, None)

    async def __call__(self, prompt: str, system_prompt: str | None = None,
                       history_messages: list[dict[str, Any]] | None = None, **kwargs: Any) -> Any:
        self.calls += 1
        history = list(history_messages or [])
        text = input_text(prompt)
        if text is None and history:  # gleaning: the chunk is in the replayed first prompt
            text = input_text(str(history[0].get("content", "")))
        hint = self.hints.get(text) if text is not None else None
        applied = False
        if hint:
            if _INPUT_FENCE in prompt:
                prompt, applied = with_hint(prompt, hint), True
            for i, message in enumerate(history):  # gleaning replays the first prompt as history
                if message.get("role") == "user" and _INPUT_FENCE in str(message.get("content", "")):
                    history[i], applied = {**message, "content": with_hint(message["content"], hint)}, True
        if applied:
            self.hinted += 1
        elif self.hints and _extraction_kind(prompt, history):
            # A LightRAG upgrade that moved the input text or its fence would silently send every
            # extract-routed chunk without its hint: the run stops instead.
            raise HintNotApplied(
                "LightRAG's extraction prompt no longer has the input-text block wikirag puts the link hint "
                f"before (lightrag {_lightrag_version()}); refusing to extract without it"
            )
        return await self.llm_func(prompt, system_prompt=system_prompt, history_messages=history, **kwargs)


class HintNotApplied(WikiragError):
    """An extraction prompt for a hinted chunk went out without its hint (LightRAG's prompt changed)."""


def _extraction_kind(prompt: str, history: list[dict[str, Any]]) -> bool:
    """True for LightRAG's extraction and gleaning prompts (by their fixed opening lines)."""
    openings = prompt_openings()
    first = str(history[0].get("content", "")) if history else ""
    return any(o and (prompt.startswith(o) or first.startswith(o)) for k, o in openings.items()
               if k in ("extract", "glean"))


def _lightrag_version() -> str:
    return str(getattr(import_lightrag(), "__version__", "unknown"))
