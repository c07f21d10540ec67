"""Anthropic's Messages API, with the `anthropic` SDK directly.

LightRAG's Anthropic binding reports no usage and builds a client whose 2 retries cannot be switched off,
so wikirag shapes the same request itself (system prompt apart, `max_tokens` defaulting to 8192) with
`max_retries=0`, and reads usage from the response or the stream's events.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wikirag.llm.client import LLMClient

_ANTHROPIC_MAX_TOKENS = 8192  # the SDK requires max_tokens; LightRAG's binding uses the same default


_CACHE = {"type": "ephemeral"}
_CACHED_KINDS = ("extract", "glean")


def cache_marked(params: dict[str, Any], kind: str, first_turn: bool) -> dict[str, Any]:
    """Prompt-cache breakpoints for LightRAG's extraction: the system prompt (static across every chunk: the
    hint and the text go in the user turn) ends a cached prefix; in a gleaning call, so does the replayed
    first user turn, which the first call marked when `first_turn` (gleaning on) so the gleaning call reads
    system prompt and chunk from the cache. Other calls (summaries, answers) are sent unmarked: a cache
    write costs 1.25x and they are not repeated."""
    if kind not in _CACHED_KINDS:
        return params
    out = dict(params)
    if out.get("system"):
        out["system"] = [{"type": "text", "text": out["system"], "cache_control": _CACHE}]
    messages = [dict(m) for m in out["messages"]]
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    marked = users[:1] if kind == "glean" and len(users) > 1 else users[-1:] if first_turn else []
    for i in marked:
        messages[i]["content"] = [{"type": "text", "text": str(messages[i]["content"]), "cache_control": _CACHE}]
    out["messages"] = messages
    return out


def usage_counts(usage: Any) -> dict[str, int]:
    """Anthropic reports fresh, cache-written and cache-read input apart; wikirag's input is their sum."""
    read = int(getattr(usage, "cache_read_input_tokens", 0) or 0)
    written = int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
    return {"prompt_tokens": int(usage.input_tokens or 0) + read + written,
            "completion_tokens": int(usage.output_tokens or 0), "cached_tokens": read, "written_tokens": written}


def anthropic_base_url(base_url: str | None) -> str | None:
    """The SDK puts `/v1/messages` after the base URL: one given with its `/v1` (as OpenAI's are written) lost
    every request to `/v1/v1/messages`."""
    if base_url and base_url.rstrip("/").endswith("/v1"):
        return base_url.rstrip("/")[: -len("/v1")]
    return base_url


async def send_anthropic(client: LLMClient, prompt: str, system_prompt: str | None,
                         history: list[dict[str, Any]], stream: bool, tracker: Any, kwargs: dict[str, Any],
                         kind: str = "other") -> Any:
    """One attempt on the Messages API with the SDK itself (no retries of its own)."""
    from anthropic import AsyncAnthropic

    sdk = AsyncAnthropic(api_key=client._api_key(), base_url=anthropic_base_url(client.target.base_url),
                         timeout=client.settings.timeout_s, max_retries=0)
    # The Messages API takes the system prompt apart; a "system" turn in the history joins it.
    systems = [system_prompt or ""] + [str(m.get("content", "")) for m in history if m.get("role") == "system"]
    params: dict[str, Any] = {
        "model": client.target.model,
        "messages": [*(m for m in history if m.get("role") != "system"), {"role": "user", "content": prompt}],
        "max_tokens": kwargs.get("max_tokens") or _ANTHROPIC_MAX_TOKENS,
    }
    if any(systems):
        params["system"] = "\n\n".join(s for s in systems if s)
    for key in ("temperature", "top_p", "top_k", "stop_sequences"):
        if kwargs.get(key) is not None:
            params[key] = kwargs[key]
    params = cache_marked(params, kind, client.cache_first_turn)
    # Anthropic has no JSON mode; LightRAG's keyword parser tolerates prose around the JSON.
    if not stream:
        try:
            response = await sdk.messages.create(**params)
        finally:
            await sdk.close()
        usage = getattr(response, "usage", None)
        if usage is not None:
            counts = usage_counts(usage)
            tracker.add_usage(counts)
            tracker.add_cached(counts["cached_tokens"], counts["written_tokens"])
        return "".join(block.text for block in response.content if getattr(block, "type", "") == "text")
    try:
        events = await sdk.messages.create(**params, stream=True)
    except BaseException:
        await sdk.close()
        raise
    return _anthropic_stream(sdk, events, tracker)


async def _anthropic_stream(sdk: Any, events: Any, tracker: Any) -> AsyncIterator[str]:
    input_tokens = output_tokens = cached = written = 0
    seen = False
    try:
        async for event in events:
            kind = getattr(event, "type", "")
            if kind == "message_start":
                counts = usage_counts(event.message.usage)
                input_tokens, output_tokens = counts["prompt_tokens"], counts["completion_tokens"]
                cached, written = counts["cached_tokens"], counts["written_tokens"]
                seen = True
            elif kind == "message_delta" and getattr(event, "usage", None) is not None:
                output_tokens, seen = event.usage.output_tokens, True
            elif kind == "content_block_delta" and getattr(event.delta, "text", None):
                yield event.delta.text
        if seen:
            tracker.add_usage({"prompt_tokens": input_tokens, "completion_tokens": output_tokens})
            tracker.add_cached(cached, written)
    finally:
        await events.close()
        await sdk.close()
