"""The OpenAI wire (OpenAI and every OpenAI-compatible server: vLLM, llama.cpp, LM Studio).

Calls go through LightRAG's `openai_complete_if_cache` with its retries off (wikirag retries); the
binding reports the provider's usage, including the last chunk of a stream.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from wikirag.lightrag.bindings import binding

if TYPE_CHECKING:
    from wikirag.llm.client import LLMClient


async def send_openai(client: LLMClient, prompt: str, system_prompt: str | None, history: list[dict[str, Any]],
                      stream: bool, tracker: Any, kwargs: dict[str, Any]) -> Any:
    """One attempt on the OpenAI wire, through LightRAG's binding (usage reported to `tracker`)."""
    if stream:
        kwargs["stream_options"] = {"include_usage": True}  # usage arrives in the last chunk
    return await binding("openai")(
        client.target.model, prompt, system_prompt=system_prompt, history_messages=history,
        base_url=client.target.base_url, api_key=client._api_key(), token_tracker=tracker,
        stream=stream or None, timeout=client.settings.timeout_s, **kwargs,
    )
