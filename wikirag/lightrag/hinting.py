"""How the hint reaches LightRAG's extraction: a wrapper around the LLM function that finds the chunk inside
LightRAG's extraction (or gleaning) prompt and puts its note's hint just before the input text. The stored
chunk stays the note's own text; only the prompt carries the hint, so LightRAG's cache keys and rebuilds
stay consistent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

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
        self.calls = 0
        self.usage: Any = None  # llm.LLMUsage when the function is a configured provider

    def __deepcopy__(self, memo: dict) -> HintingLLM:
        # LightRAG deep-copies its dataclass fields into a config dict; the wrapper is shared state (the
        # hints the pipeline sets, the wrapped client's connections), so every copy must be this object.
        return self

    async def __call__(self, prompt: str, system_prompt: str | None = None,
                       history_messages: list[dict[str, Any]] | None = None, **kwargs: Any) -> Any:
        self.calls += 1
        history = list(history_messages or [])
        text = input_text(prompt)
        if text is None and history:  # gleaning: the chunk is in the replayed first prompt
            text = input_text(str(history[0].get("content", "")))
        hint = self.hints.get(text) if text is not None else None
        if hint:
            if _INPUT_FENCE in prompt:
                prompt = with_hint(prompt, hint)
            history = [
                {**m, "content": with_hint(m["content"], hint)}
                if m.get("role") == "user" and _INPUT_FENCE in str(m.get("content", "")) else m
                for m in history
            ]
        return await self.llm_func(prompt, system_prompt=system_prompt, history_messages=history, **kwargs)

