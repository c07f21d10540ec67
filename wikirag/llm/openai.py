"""The OpenAI wire (OpenAI and every OpenAI-compatible server: vLLM, llama.cpp, LM Studio).

Calls go through LightRAG's `openai_complete_if_cache` with its retries off (wikirag retries); the
binding reports the provider's usage, including the last chunk of a stream. It drops
`usage.prompt_tokens_details.cached_tokens` (OpenAI's automatic prompt caching), so the HTTP client handed
to the binding reads it from the JSON response itself (an httpx response hook; streams are left alone).
"""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

from wikirag.lightrag.bindings import binding

if TYPE_CHECKING:
    from wikirag.llm.client import LLMClient


async def send_openai(client: LLMClient, prompt: str, system_prompt: str | None, history: list[dict[str, Any]],
                      stream: bool, tracker: Any, kwargs: dict[str, Any]) -> Any:
    """One attempt on the OpenAI wire, through LightRAG's binding (usage reported to `tracker`)."""
    if stream:
        kwargs["stream_options"] = {"include_usage": True}  # usage arrives in the last chunk
    else:
        kwargs["openai_client_configs"] = {"http_client": _cached_tokens_client(tracker)}
    return await binding("openai")(
        client.target.model, prompt, system_prompt=system_prompt, history_messages=history,
        base_url=client.target.base_url, api_key=client._api_key(), token_tracker=tracker,
        stream=stream or None, timeout=client.settings.timeout_s, **kwargs,
    )


def cached_tokens(body: bytes) -> int:
    """`usage.prompt_tokens_details.cached_tokens` of a chat completion's JSON body (0 when absent)."""
    try:
        usage = json.loads(body).get("usage") or {}
    except (ValueError, AttributeError):
        return 0
    details = usage.get("prompt_tokens_details") or {}
    return int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0


@functools.cache
def _ssl_context() -> Any:
    """One TLS context for every call: building one loads the CA bundle (about 80 ms of CPU, on the event
    loop), and the binding makes a client per call."""
    import httpx2

    return httpx2.create_ssl_context()


def _cached_tokens_client(tracker: Any) -> Any:
    """The SDK's default HTTP client plus a hook that hands each completion's cached tokens to `tracker`
    (the binding closes it with the OpenAI client it builds per call)."""
    from openai import DefaultAsyncHttpxClient

    async def on_response(response: Any) -> None:
        if response.request.url.path.endswith("/chat/completions") and \
                "json" in response.headers.get("content-type", ""):
            await response.aread()
            tracker.add_cached(cached_tokens(response.content))

    return DefaultAsyncHttpxClient(event_hooks={"response": [on_response]}, verify=_ssl_context())
