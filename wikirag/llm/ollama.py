"""Ollama's native API, through LightRAG's binding with its retries off.

Ollama's default context (2-4k tokens) silently truncates LightRAG's ~2k-token prompts, so every call asks
for `_OLLAMA_NUM_CTX` unless the caller set `num_ctx`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wikirag.lightrag.bindings import binding

if TYPE_CHECKING:
    from wikirag.llm.client import LLMClient

_OLLAMA_NUM_CTX = 8192


async def send_ollama(client: LLMClient, prompt: str, system_prompt: str | None, history: list[dict[str, Any]],
                      stream: bool, tracker: Any, kwargs: dict[str, Any]) -> Any:
    """One attempt on Ollama's native API, through LightRAG's binding, with a context that fits the prompts."""
    options = dict(kwargs.pop("options", None) or {})
    options.setdefault("num_ctx", _OLLAMA_NUM_CTX)
    if client.target.base_url:
        kwargs["host"] = client.target.base_url
    if stream:
        kwargs["stream"] = True
    return await binding("ollama")(
        client.target.model, prompt, system_prompt=system_prompt, history_messages=history,
        token_tracker=tracker, timeout=client.settings.timeout_s, options=options, **kwargs,
    )
