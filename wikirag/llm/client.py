"""LLM providers for LightRAG: OpenAI (and any OpenAI-compatible server), Ollama, Anthropic.

`make_llm_func(settings, usage)` returns an async function with LightRAG's `llm_model_func` signature.
Each call goes through one retry loop (tenacity, exponential backoff with jitter, `Retry-After` when the
server sends one) on 429 / 5xx / 408 / 409 / timeouts / connection errors, never on auth or validation
errors; through an `asyncio.Semaphore(concurrency)` per event loop; and with `timeout_s` per attempt.
A rate limit (429, 529 overloaded, 503) pauses the whole pool, not just the refused request: every request
waits at the gate until the server's `Retry-After` (or our backoff) has passed, so 16 requests in flight
do not keep hammering a server that asked for quiet. `concurrency = 0` (the default) means 16 for hosted
APIs and 4 for Ollama and other local servers (spec.effective_concurrency).

Checked against lightrag-hku 1.5.7:
- `openai_complete_if_cache` and `_ollama_model_if_cache` carry their own tenacity decorators (3
  attempts, 4-10 s waits). We call them through `retry_with(stop=stop_after_attempt(1), reraise=True)`
  so ours is the only retry loop: retries never multiply and every one is counted. The OpenAI binding
  builds its client with `max_retries=0`, so the SDK does not retry underneath either. (The Ollama
  binding's retry list names LightRAG's own exception classes, which the ollama client never raises:
  it would not have retried at all.)
- Both bindings accept `token_tracker` and hand it the provider's reported usage (`usage` in OpenAI
  responses, including the final chunk of a stream when `stream_options.include_usage` is set; Ollama's
  `prompt_eval_count` / `eval_count`). When a provider reports nothing, the call is counted with
  tiktoken and marked in `LLMUsage.estimated_calls`.
- The Anthropic binding reports no usage and builds a client with the SDK's default 2 retries that
  cannot be switched off, so Anthropic calls use the `anthropic` SDK directly (`max_retries=0`), shaped
  like the binding's request (system prompt apart, `max_tokens` defaulting to 8192).

API keys come from the providers' usual variables and never appear in reprs or raised messages:
`redact()` cleans every message this module raises, and every record of the `lightrag`, `httpx` and
`httpx2` loggers (LightRAG's bindings log provider error bodies verbatim).
"""

from __future__ import annotations

import asyncio
import os
import time
import weakref
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

from wikirag.errors import ConfigError
from wikirag.lightrag.bindings import binding, prompt_openings
from wikirag.llm.anthropic import send_anthropic
from wikirag.llm.ollama import send_ollama
from wikirag.llm.openai import send_openai
from wikirag.llm.redact import install_log_redaction
from wikirag.llm.retry import (
    Backoff,
    LLMCallError,
    affects_every_call,
    error_text,
    is_provider_error,
    is_retryable,
    retry_after,
    status_code_of,
)
from wikirag.llm.spec import (
    KEY_ENV,
    PLACEHOLDER_KEY,
    effective_concurrency,
    key_required,
    provider_host,
    provider_target,
)
from wikirag.llm.usage import LLMUsage, UsageTracker
from wikirag.redaction import redact
from wikirag.settings import LLMSettings

# Refusals that mean "the server is busy": they pause the whole pool (429 rate limit, 529 Anthropic
# overloaded, 503 unavailable).
_POOL_STATUS = frozenset({429, 503, 529})

# `query` and the MCP query tool: someone waits, and a failed answer still shows the retrieved context. So at
# most 2 retries, about 0.5 s then 1 s apart (a Retry-After capped at 4 s): an unreachable server is said in
# about 2 s, where index's default 4 retries took 19.9 s. Index keeps `[llm] max_retries` and its backoff.
QUERY_MAX_RETRIES = 2
QUERY_BACKOFF = Backoff(initial_s=0.5, max_s=4.0)


def _call_kind(prompt: str, kwargs: dict[str, Any]) -> str:
    for kind, opening in prompt_openings().items():
        if opening and prompt.startswith(opening):
            return kind
    if kwargs.get("response_format") is not None:
        return "keywords"
    if kwargs.get("stream") or kwargs.get("enable_cot"):
        return "answer"
    return "other"


def _estimate(messages_text: str, output: str) -> tuple[int, int]:
    from wikirag.lightrag.tokens import count_tokens

    return count_tokens(messages_text), count_tokens(output)


class LLMClient:
    """One configured provider: the LightRAG-compatible call, its semaphore and its usage counters."""

    def __init__(self, settings: LLMSettings, usage: LLMUsage | None = None, *,
                 backoff: Backoff | None = None) -> None:
        self.target = provider_target(settings)
        self.settings = settings
        self.usage = usage if usage is not None else LLMUsage()
        self.backoff = backoff or Backoff()
        self._api_key()  # a missing key is a configuration error now, not at the first call
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary())
        self.concurrency = effective_concurrency(settings)
        self.in_flight = 0  # requests on the wire now (the progress line shows it)
        self._pause_until = 0.0  # time.monotonic() before which no request starts (a rate limit hit the pool)
        self._strikes = 0  # rate limits in a row without a success: the pool's own backoff grows with them
        # Anthropic: also mark the first extraction turn for the prompt cache, so the gleaning call (which
        # replays it) reads it; worth the cache-write premium only when gleaning is on.
        self.cache_first_turn = False
        # The last call's failure: a query tells the LLM's failure (a fallback to its context) from LightRAG's
        # own, which LightRAG returns as text only.
        self.last_error: LLMCallError | None = None
        install_log_redaction()

    def __repr__(self) -> str:  # never the key
        t = self.target
        return f"LLMClient({t.named}:{t.model}, base_url_host={provider_host(t.base_url)!r})"

    def _api_key(self) -> str | None:
        # Read at each call rather than kept on the object, where a debugger or `vars()` would show it.
        env = KEY_ENV[self.target.provider]
        key = os.environ.get(env)
        if key:
            return key
        if key_required(self.target):
            raise ConfigError(f"LLM {self.target.named}:{self.target.model} needs {env} in the environment")
        return PLACEHOLDER_KEY if self.target.provider != "ollama" else None

    def _semaphore(self) -> asyncio.Semaphore:
        # One per event loop: each CLI command runs its own asyncio.run(), and a semaphore must not
        # outlive its loop.
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = self._semaphores[loop] = asyncio.Semaphore(self.concurrency)
        return semaphore

    def _wait_s(self, attempt: int, exc: BaseException) -> float:
        import random

        after = retry_after(exc)
        if after is not None:
            return min(max(after, 0.0), self.backoff.max_s)
        base = min(self.backoff.initial_s * 2 ** (attempt - 1), self.backoff.max_s)
        return base + random.uniform(0, self.backoff.initial_s)

    def _retry_wait(self, attempt: int, exc: BaseException) -> float:
        """tenacity's wait: a rate limit pauses the whole pool (the request then waits at the gate like
        every other); other errors back off this request alone."""
        if status_code_of(exc) not in _POOL_STATUS:
            return self._wait_s(attempt, exc)
        self._strikes += 1
        wait = self._wait_s(max(attempt, self._strikes), exc)
        self._pause_until = max(self._pause_until, time.monotonic() + wait)
        return 0.0

    async def _gate(self) -> None:
        """Wait while the pool is paused by a rate limit."""
        while (delay := self._pause_until - time.monotonic()) > 0:
            await asyncio.sleep(delay)

    async def __call__(self, prompt: str, system_prompt: str | None = None,
                       history_messages: list[dict[str, Any]] | None = None,
                       keyword_extraction: bool = False, **kwargs: Any) -> str | AsyncIterator[str]:
        """LightRAG's `llm_model_func`. LightRAG 1.5.7 passes `hashing_kv`, `history_messages`,
        `max_tokens`, `response_format`, and for answers `enable_cot` and `stream`."""
        kwargs.pop("hashing_kv", None)
        outer_tracker = kwargs.pop("token_tracker", None)
        kwargs.pop("entity_extraction", None)
        if keyword_extraction and kwargs.get("response_format") is None:
            kwargs["response_format"] = {"type": "json_object"}  # the bindings' non-deprecated spelling
        history = list(history_messages or [])
        self._load_binding()  # imports take a while the first time: not inside the attempt's timeout
        kind = _call_kind(prompt, kwargs)
        stream = bool(kwargs.pop("stream", False))
        self.usage.add_call(kind)
        return await self._with_retries(kind, prompt, system_prompt, history, stream, outer_tracker, kwargs)

    async def _with_retries(self, kind: str, prompt: str, system_prompt: str | None,
                            history: list[dict[str, Any]], stream: bool, outer_tracker: Any,
                            kwargs: dict[str, Any]) -> str | AsyncIterator[str]:
        from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.settings.max_retries + 1),
            wait=lambda state: self._retry_wait(state.attempt_number, state.outcome.exception()),
            retry=retry_if_exception(is_retryable),
            before_sleep=lambda state: self.usage.add_retry(),
            reraise=True,
        )
        try:
            return await retrying(self._attempt, kind, prompt, system_prompt, history, stream, outer_tracker,
                                  kwargs)
        except Exception as exc:
            self.usage.add_failure()
            if not is_provider_error(exc):
                raise  # a bug of ours or LightRAG's: keep its type and traceback
            raise self._call_error(exc, retrying.statistics.get("attempt_number", 1)) from None

    def _call_error(self, exc: BaseException, attempts: int) -> LLMCallError:
        """The redacted LLMCallError for a provider's `exc` (its message and traceback could carry a key)."""
        t = self.target
        self.last_error = LLMCallError(
            redact(f"{t.named}:{t.model}: {error_text(exc, self.settings.timeout_s)}"),
            status_code=status_code_of(exc), retryable=is_retryable(exc), attempts=attempts,
            every_call=affects_every_call(exc))
        return self.last_error

    async def _attempt(self, kind: str, prompt: str, system_prompt: str | None,
                       history: list[dict[str, Any]], stream: bool, outer_tracker: Any,
                       kwargs: dict[str, Any]) -> str | AsyncIterator[str]:
        kwargs = dict(kwargs)  # each attempt starts from the caller's arguments
        tracker = UsageTracker()
        sent_text = "\n".join([system_prompt or "", *(str(m.get("content", "")) for m in history), prompt])
        # The semaphore covers the request; for a stream, until the response starts (the caller owns
        # the iterator and might never finish it).
        async with self._semaphore():
            await self._gate()
            self.in_flight += 1
            try:
                send = self._send(kind, prompt, system_prompt, history, stream, tracker, kwargs)
                result = await asyncio.wait_for(send, timeout=self.settings.timeout_s)
            except BaseException:
                if tracker.reported:  # billed even though unusable (the OpenAI binding counts first)
                    self._record(kind, tracker, outer_tracker)
                raise
            finally:
                self.in_flight -= 1
            self._strikes = 0
        if stream and not isinstance(result, str):
            return self._counted_stream(result, kind, tracker, outer_tracker, sent_text)
        if tracker.reported:
            self._record(kind, tracker, outer_tracker)
        else:
            self._record_estimate(kind, sent_text, str(result), outer_tracker)
        return result

    def _record(self, kind: str, tracker: UsageTracker, outer_tracker: Any, *, estimated: bool = False) -> None:
        self.usage.add_tokens(kind, tracker.input_tokens, tracker.output_tokens, estimated=estimated,
                              cached_input_tokens=min(tracker.cached_input_tokens, tracker.input_tokens),
                              cache_write_input_tokens=min(tracker.cache_write_input_tokens, tracker.input_tokens))
        if outer_tracker is not None:  # a caller's own TokenTracker sees the same figures
            outer_tracker.add_usage({"prompt_tokens": tracker.input_tokens,
                                     "completion_tokens": tracker.output_tokens,
                                     "total_tokens": tracker.input_tokens + tracker.output_tokens})

    def _record_estimate(self, kind: str, sent_text: str, output: str, outer_tracker: Any) -> None:
        tracker = UsageTracker()
        tracker.input_tokens, tracker.output_tokens = _estimate(sent_text, output)
        self._record(kind, tracker, outer_tracker, estimated=True)

    async def _counted_stream(self, chunks: AsyncIterator[str], kind: str, tracker: UsageTracker,
                              outer_tracker: Any, sent_text: str) -> AsyncIterator[str]:
        parts: list[str] = []
        finished = False
        try:
            async for chunk in chunks:
                parts.append(chunk)
                yield chunk
            finished = True
        except Exception as exc:  # the connection dropped mid-answer: no retry (part of it is out), redacted
            self.usage.add_failure()
            if not is_provider_error(exc):
                raise
            raise self._call_error(exc, 1) from None
        finally:
            if tracker.reported:
                self._record(kind, tracker, outer_tracker)
            elif finished:
                self._record_estimate(kind, sent_text, "".join(parts), outer_tracker)

    def _load_binding(self) -> None:
        """Import the provider's code now, so the first attempt's timeout is all network."""
        if self.target.provider == "anthropic":
            import anthropic  # noqa: F401
        else:
            binding(self.target.provider)

    async def _send(self, kind: str, prompt: str, system_prompt: str | None, history: list[dict[str, Any]],
                    stream: bool, tracker: UsageTracker, kwargs: dict[str, Any]) -> str | AsyncIterator[str]:
        if self.target.provider == "anthropic":
            return await send_anthropic(self, prompt, system_prompt, history, stream, tracker, kwargs, kind=kind)
        send = {"openai": send_openai, "ollama": send_ollama}[self.target.provider]
        return await send(self, prompt, system_prompt, history, stream, tracker, kwargs)


def make_llm_func(settings: LLMSettings, usage: LLMUsage | None = None, *,
                  backoff: Backoff | None = None) -> LLMClient:
    """An async callable with LightRAG's `llm_model_func` signature for `settings` (`provider:model`).

    Raises ConfigError for a bad spec or a missing API key. Counts into `usage` (also at `.usage`).
    """
    return LLMClient(settings, usage, backoff=backoff)



def make_answer_llm_func(settings: LLMSettings, usage: LLMUsage | None = None) -> LLMClient:
    """make_llm_func for answering a question: fewer retries, shorter waits (QUERY_MAX_RETRIES, QUERY_BACKOFF);
    a lower `[llm] max_retries` still holds."""
    quick = replace(settings, max_retries=min(settings.max_retries, QUERY_MAX_RETRIES))
    return LLMClient(quick, usage, backoff=QUERY_BACKOFF)
