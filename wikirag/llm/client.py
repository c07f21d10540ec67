"""LLM providers for LightRAG: OpenAI (and any OpenAI-compatible server), Ollama, Anthropic.

`make_llm_func(settings, usage)` returns an async function with LightRAG's `llm_model_func` signature.
Each call goes through one retry loop (tenacity, exponential backoff with jitter, `Retry-After` when the
server sends one) on 429 / 5xx / 408 / 409 / timeouts / connection errors, never on auth or validation
errors; through an `asyncio.Semaphore(concurrency)` per event loop; and with `timeout_s` per attempt.

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
import logging
import os
import re
import sys
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar
from urllib.parse import urlsplit

from wikirag.errors import ConfigError, WikiragError
from wikirag.settings import LLMSettings

PROVIDERS = ("openai", "ollama", "anthropic")
# OpenAI-compatible servers by name: same wire as "openai", with their usual local address.
OPENAI_COMPATIBLE = {
    "vllm": "http://127.0.0.1:8000/v1",
    "llamacpp": "http://127.0.0.1:8080/v1",
    "llama.cpp": "http://127.0.0.1:8080/v1",
    "lmstudio": "http://127.0.0.1:1234/v1",
}
KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "ollama": "OLLAMA_API_KEY"}
# Local servers ignore the key, but the OpenAI SDK refuses to start without one.
_PLACEHOLDER_KEY = "not-needed"
_ANTHROPIC_MAX_TOKENS = 8192  # the SDK requires max_tokens; LightRAG's binding uses the same default
_OLLAMA_NUM_CTX = 8192  # Ollama's default context (2-4k) silently truncates LightRAG's ~2k-token prompts


class LLMCallError(WikiragError):
    """An LLM call failed (after retries, or at once for a non-retryable error); the message is redacted."""

    def __init__(self, message: str, *, status_code: int | None = None, retryable: bool = False,
                 attempts: int = 1) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.retryable = retryable
        self.attempts = attempts


# -- usage -----------------------------------------------------------------------------------------


@dataclass
class KindUsage:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class LLMUsage:
    """What the LLM cost, from the provider's own usage reports.

    `calls` counts LightRAG's calls (each once, however many attempts); `retries` the extra attempts;
    `failures` the calls that raised in the end. Tokens include failed and retried attempts when the
    provider billed them. `estimated_calls` were counted with tiktoken because the provider reported no
    usage. `by_kind`: extract, glean, summary, keywords, answer, other.
    """

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    retries: int = 0
    failures: int = 0
    estimated_calls: int = 0
    by_kind: dict[str, KindUsage] = field(default_factory=dict)

    # Class-level so `asdict()` stays plain data; counters may be bumped from LightRAG's worker threads.
    _lock: ClassVar[threading.Lock] = threading.Lock()

    @property
    def requests(self) -> int:
        return self.calls + self.retries

    def _kind(self, kind: str) -> KindUsage:
        return self.by_kind.setdefault(kind, KindUsage())

    def add_call(self, kind: str) -> None:
        with self._lock:
            self.calls += 1
            self._kind(kind).calls += 1

    def add_tokens(self, kind: str, input_tokens: int, output_tokens: int, *, estimated: bool = False) -> None:
        with self._lock:
            self.input_tokens += input_tokens
            self.output_tokens += output_tokens
            per_kind = self._kind(kind)
            per_kind.input_tokens += input_tokens
            per_kind.output_tokens += output_tokens
            if estimated:
                self.estimated_calls += 1

    def add_retry(self) -> None:
        with self._lock:
            self.retries += 1

    def add_failure(self) -> None:
        with self._lock:
            self.failures += 1


class _Tracker:
    """LightRAG's `token_tracker` protocol (`add_usage(dict)`), collecting one attempt's reported usage."""

    def __init__(self) -> None:
        self.reported = False
        self.input_tokens = 0
        self.output_tokens = 0

    def add_usage(self, counts: dict[str, Any]) -> None:
        input_tokens = int(counts.get("prompt_tokens") or 0)
        output_tokens = int(counts.get("completion_tokens") or 0)
        # The OpenAI binding reports zeros when a response has `usage: null`: that is no report.
        if input_tokens or output_tokens:
            self.reported = True
            self.input_tokens += input_tokens
            self.output_tokens += output_tokens


# -- spec, redaction, description ------------------------------------------------------------------


def parse_llm_spec(spec: str) -> tuple[str, str]:
    """`"openai:gpt-4o-mini"` -> `("openai", "gpt-4o-mini")`. The model may itself contain colons
    (`ollama:qwen2.5:7b`). Named OpenAI-compatible servers (vllm, llamacpp, lmstudio) are accepted as
    providers; they speak the OpenAI wire."""
    provider, sep, model = (spec or "").strip().partition(":")
    provider = provider.strip().lower()
    model = model.strip()
    if not sep or not provider or not model:
        raise ConfigError(f"LLM {spec!r}: write it as provider:model, e.g. openai:gpt-4o-mini")
    if provider not in PROVIDERS and provider not in OPENAI_COMPATIBLE:
        known = ", ".join((*PROVIDERS, *OPENAI_COMPATIBLE))
        raise ConfigError(f"LLM {spec!r}: unknown provider {provider!r} (use one of {known})")
    return provider, model


@dataclass(frozen=True)
class _Target:
    provider: str  # the wire: openai, ollama or anthropic
    model: str
    base_url: str | None
    named: str  # the provider as written (vllm, lmstudio, ...)


def _target(settings: LLMSettings) -> _Target:
    named, model = parse_llm_spec(settings.model)
    base_url = (settings.base_url or "").strip() or None
    provider = named
    if named in OPENAI_COMPATIBLE:
        provider, base_url = "openai", base_url or OPENAI_COMPATIBLE[named]
    if provider == "ollama" and base_url:
        base_url = re.sub(r"/v1/?$", "", base_url.rstrip("/"))  # the native API lives at the root
    if settings.concurrency < 1:
        raise ConfigError(f"[llm] concurrency must be at least 1, got {settings.concurrency}")
    if settings.timeout_s <= 0:
        raise ConfigError(f"[llm] timeout_s must be positive, got {settings.timeout_s}")
    if settings.max_retries < 0:
        raise ConfigError(f"[llm] max_retries must be 0 or more, got {settings.max_retries}")
    return _Target(provider=provider, model=model, base_url=base_url, named=named)


_KEY_PATTERNS = [
    re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),  # OpenAI sk-/sk-proj-, Anthropic sk-ant-
    re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9_\-.=:/+]{8,}"),
    re.compile(r"(?i)((?:x-api-key|api[_-]?key|authorization)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}&]{8,}"),
    re.compile(r"(?i)([?&](?:api[_-]?)?key=)[^&\s\"']+"),
]
_SECRET_ENV = re.compile(r"(?:API_KEY|_TOKEN|_SECRET|_SECRET_KEY|_ACCESS_KEY|_PASSWORD)$")


def _secret_values() -> list[str]:
    values = {v for k, v in os.environ.items() if _SECRET_ENV.search(k) and v and len(v) >= 8}
    return sorted(values, key=len, reverse=True)  # longest first, so one key inside another goes whole


def redact(text: str) -> str:
    """`text` with API keys replaced by `[redacted]`: anything shaped like a key, and the literal values
    of secret-looking environment variables (OPENAI_API_KEY, ANTHROPIC_API_KEY, *_TOKEN, ...)."""
    text = str(text)
    for value in _secret_values():
        text = text.replace(value, "[redacted]")
    for pattern in _KEY_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.re.groups else "") + "[redacted]", text)
    return text


class _RedactingFilter(logging.Filter):
    """Redacts LightRAG's own log lines (its bindings log provider error bodies verbatim) and httpx's
    request lines (a URL may carry a key). Logger filters see only their own logger's records."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


_FILTER = _RedactingFilter()


def _install_log_redaction() -> None:
    for name in ("lightrag", "httpx", "httpx2"):
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


def _host(base_url: str | None) -> str | None:
    """scheme://host:port only: a base URL may carry user:password or a query-string key."""
    if not base_url:
        return None
    parts = urlsplit(base_url)
    if not parts.hostname:
        return None
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}" if parts.scheme else f"{parts.hostname}{port}"


def _key_required(target: _Target) -> bool:
    if target.provider == "ollama":
        return False
    return target.base_url is None and not (target.provider == "openai" and os.environ.get("OPENAI_API_BASE"))


def describe_llm(settings: LLMSettings) -> dict[str, Any]:
    """Plain data for `doctor` and `--json`: provider, model, base URL host, the key variable that
    applies and whether it is set (never its value). Raises ConfigError for a malformed spec."""
    limits = {"concurrency": settings.concurrency, "timeout_s": settings.timeout_s,
              "max_retries": settings.max_retries}
    if not settings.model:
        return {"configured": False, "provider": None, "wire": None, "model": None, "base_url_host": None,
                "key_env": None, "key_set": False, "key_required": False, **limits}
    target = _target(settings)
    key_env = KEY_ENV[target.provider]
    key_set, required = bool(os.environ.get(key_env)), _key_required(target)
    # A local server needs no key: name the variable only when it is required or set (then it is sent).
    return {"configured": True, "provider": target.named, "wire": target.provider, "model": target.model,
            "base_url_host": _host(target.base_url), "key_env": key_env if required or key_set else None,
            "key_set": key_set, "key_required": required, **limits}


def lightrag_llm_kwargs(settings: LLMSettings) -> dict[str, Any]:
    """LightRAG constructor arguments that should follow the LLM settings (for `engine.open_engine`).

    - `llm_model_name`: part of LightRAG's LLM-cache key, so another model does not reuse answers.
    - `llm_model_max_async`: LightRAG queues per role (extract, keyword, query) with this many workers
      each; our semaphore caps them all together, this keeps the queues from holding idle slots.
    - `default_llm_timeout`: LightRAG cancels a call after twice this; it must outlast our retries.
    """
    target = _target(settings)
    attempts = settings.max_retries + 1
    budget = settings.timeout_s * attempts + Backoff().max_s * settings.max_retries
    return {
        "llm_model_name": f"{target.named}:{target.model}",
        "llm_model_max_async": settings.concurrency,
        "default_llm_timeout": int(budget / 2) + 1,
    }


# -- retry policy ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter: about initial_s, 2x, 4x ... capped at max_s, plus up to
    initial_s of random jitter; a server's Retry-After wins (capped at max_s)."""

    initial_s: float = 1.0
    max_s: float = 30.0


_RETRY_STATUS = frozenset({408, 409, 429})


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) and status > 0 else None


def is_retryable(exc: BaseException) -> bool:
    """429 (except permanent quota stops), 5xx, 408/409, timeouts, connection errors, and the OpenAI
    binding's empty-response error. Never 400/401/403/404/422."""
    status = _status(exc)
    if status is not None:
        if status == 429:
            from wikirag.lightrag.engine import import_lightrag

            import_lightrag()
            from lightrag.llm._error_utils import is_permanent_rate_limit_error

            return not is_permanent_rate_limit_error(exc)
        return status in _RETRY_STATUS or status >= 500
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError, ConnectionError)):
        return True
    # ollama uses httpx; current openai/anthropic SDKs use its fork httpx2 (and wrap its errors).
    for name in ("httpx", "httpx2"):
        module = sys.modules.get(name)
        if module is not None and isinstance(exc, module.TransportError):
            return not isinstance(exc, module.UnsupportedProtocol)
    names = {cls.__name__ for cls in type(exc).__mro__}
    # SDK connection/timeout classes (openai, anthropic) and the OpenAI binding's retryable wrappers.
    if names & {"APIConnectionError", "APITimeoutError", "TransientBadRequestError"}:
        return True
    return type(exc).__name__ == "InvalidResponseError" and type(exc).__module__ == "lightrag.llm.openai"


def _is_provider_error(exc: BaseException) -> bool:
    """Errors from the wire or the provider SDKs (wrapped and redacted), as opposed to bugs (re-raised)."""
    if _status(exc) is not None or is_retryable(exc):
        return True
    module = type(exc).__module__.split(".")[0]
    return module in {"openai", "anthropic", "ollama", "httpx", "httpx2", "lightrag"}


def _error_text(exc: BaseException, timeout_s: float) -> str:
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)) and not str(exc):
        return f"no answer within {timeout_s:g} s (timeout_s)"
    return f"{type(exc).__name__}: {exc}"


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        if headers.get("retry-after-ms") is not None:
            return float(headers["retry-after-ms"]) / 1000
        if headers.get("retry-after") is not None:
            return float(headers["retry-after"])
    except (TypeError, ValueError):  # an HTTP date: fall back to our own backoff
        return None
    return None


# -- the LLM function ------------------------------------------------------------------------------

_OPENINGS: dict[str, str] | None = None


def _openings() -> dict[str, str]:
    """The fixed opening lines of LightRAG's prompts, to tell call kinds apart for `by_kind`."""
    global _OPENINGS
    if _OPENINGS is None:
        from wikirag.lightrag.engine import import_lightrag

        import_lightrag()
        from lightrag.prompt import PROMPTS

        def head(name: str) -> str:
            return re.split(r"(?<!\{)\{(?!\{)", PROMPTS[name], maxsplit=1)[0][:80]

        _OPENINGS = {
            "extract": head("entity_extraction_user_prompt"),
            "glean": head("entity_continue_extraction_user_prompt"),
            "summary": head("summarize_entity_descriptions"),
            "keywords": head("keywords_extraction"),
        }
    return _OPENINGS


def _call_kind(prompt: str, kwargs: dict[str, Any]) -> str:
    for kind, opening in _openings().items():
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
        self.target = _target(settings)
        self.settings = settings
        self.usage = usage if usage is not None else LLMUsage()
        self.backoff = backoff or Backoff()
        self._api_key()  # a missing key is a configuration error now, not at the first call
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary())
        self._binding: Callable[..., Any] | None = None
        _install_log_redaction()

    def __repr__(self) -> str:  # never the key
        t = self.target
        return f"LLMClient({t.named}:{t.model}, base_url_host={_host(t.base_url)!r})"

    def _api_key(self) -> str | None:
        # Read at each call rather than kept on the object, where a debugger or `vars()` would show it.
        env = KEY_ENV[self.target.provider]
        key = os.environ.get(env)
        if key:
            return key
        if _key_required(self.target):
            raise ConfigError(f"LLM {self.target.named}:{self.target.model} needs {env} in the environment")
        return _PLACEHOLDER_KEY if self.target.provider != "ollama" else None

    def _semaphore(self) -> asyncio.Semaphore:
        # One per event loop: each CLI command runs its own asyncio.run(), and a semaphore must not
        # outlive its loop.
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = self._semaphores[loop] = asyncio.Semaphore(self.settings.concurrency)
        return semaphore

    def _wait_s(self, attempt: int, exc: BaseException) -> float:
        import random

        after = _retry_after(exc)
        if after is not None:
            return min(max(after, 0.0), self.backoff.max_s)
        base = min(self.backoff.initial_s * 2 ** (attempt - 1), self.backoff.max_s)
        return base + random.uniform(0, self.backoff.initial_s)

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
            wait=lambda state: self._wait_s(state.attempt_number, state.outcome.exception()),
            retry=retry_if_exception(is_retryable),
            before_sleep=lambda state: self.usage.add_retry(),
            reraise=True,
        )
        try:
            return await retrying(self._attempt, kind, prompt, system_prompt, history, stream, outer_tracker,
                                  kwargs)
        except Exception as exc:
            self.usage.add_failure()
            if not _is_provider_error(exc):
                raise  # a bug of ours or LightRAG's: keep its type and traceback
            t = self.target
            raise LLMCallError(
                redact(f"{t.named}:{t.model}: {_error_text(exc, self.settings.timeout_s)}"),
                status_code=_status(exc), retryable=is_retryable(exc),
                attempts=retrying.statistics.get("attempt_number", 1),
            ) from None  # the original's message and traceback could carry a key

    async def _attempt(self, kind: str, prompt: str, system_prompt: str | None,
                       history: list[dict[str, Any]], stream: bool, outer_tracker: Any,
                       kwargs: dict[str, Any]) -> str | AsyncIterator[str]:
        kwargs = dict(kwargs)  # each attempt starts from the caller's arguments
        tracker = _Tracker()
        sent_text = "\n".join([system_prompt or "", *(str(m.get("content", "")) for m in history), prompt])
        # The semaphore covers the request; for a stream, until the response starts (the caller owns
        # the iterator and might never finish it).
        async with self._semaphore():
            try:
                send = self._send(prompt, system_prompt, history, stream, tracker, kwargs)
                result = await asyncio.wait_for(send, timeout=self.settings.timeout_s)
            except BaseException:
                if tracker.reported:  # billed even though unusable (the OpenAI binding counts first)
                    self._record(kind, tracker, outer_tracker)
                raise
        if stream and not isinstance(result, str):
            return self._counted_stream(result, kind, tracker, outer_tracker, sent_text)
        if tracker.reported:
            self._record(kind, tracker, outer_tracker)
        else:
            self._record_estimate(kind, sent_text, str(result), outer_tracker)
        return result

    def _record(self, kind: str, tracker: _Tracker, outer_tracker: Any, *, estimated: bool = False) -> None:
        self.usage.add_tokens(kind, tracker.input_tokens, tracker.output_tokens, estimated=estimated)
        if outer_tracker is not None:  # a caller's own TokenTracker sees the same figures
            outer_tracker.add_usage({"prompt_tokens": tracker.input_tokens,
                                     "completion_tokens": tracker.output_tokens,
                                     "total_tokens": tracker.input_tokens + tracker.output_tokens})

    def _record_estimate(self, kind: str, sent_text: str, output: str, outer_tracker: Any) -> None:
        tracker = _Tracker()
        tracker.input_tokens, tracker.output_tokens = _estimate(sent_text, output)
        self._record(kind, tracker, outer_tracker, estimated=True)

    async def _counted_stream(self, chunks: AsyncIterator[str], kind: str, tracker: _Tracker,
                              outer_tracker: Any, sent_text: str) -> AsyncIterator[str]:
        parts: list[str] = []
        finished = False
        try:
            async for chunk in chunks:
                parts.append(chunk)
                yield chunk
            finished = True
        finally:
            if tracker.reported:
                self._record(kind, tracker, outer_tracker)
            elif finished:
                self._record_estimate(kind, sent_text, "".join(parts), outer_tracker)

    def _load_binding(self) -> Callable[..., Any] | None:
        """LightRAG's binding function with its own retry loop set to one try (None for Anthropic)."""
        if self.target.provider == "anthropic":
            import anthropic  # noqa: F401  (imported now so the first attempt's timeout is all network)
            return None
        if self._binding is None:
            from tenacity import stop_after_attempt

            from wikirag.lightrag.engine import import_lightrag

            import_lightrag()
            if self.target.provider == "openai":
                from lightrag.llm.openai import openai_complete_if_cache as binding
            else:
                from lightrag.llm.ollama import _ollama_model_if_cache as binding
            self._binding = binding.retry_with(stop=stop_after_attempt(1), reraise=True)
        return self._binding

    async def _send(self, prompt: str, system_prompt: str | None, history: list[dict[str, Any]],
                    stream: bool, tracker: _Tracker, kwargs: dict[str, Any]) -> str | AsyncIterator[str]:
        provider = self.target.provider
        if provider == "openai":
            return await self._send_openai(prompt, system_prompt, history, stream, tracker, kwargs)
        if provider == "ollama":
            return await self._send_ollama(prompt, system_prompt, history, stream, tracker, kwargs)
        return await self._send_anthropic(prompt, system_prompt, history, stream, tracker, kwargs)

    async def _send_openai(self, prompt, system_prompt, history, stream, tracker, kwargs):
        if stream:
            kwargs["stream_options"] = {"include_usage": True}  # usage arrives in the last chunk
        return await self._load_binding()(
            self.target.model, prompt, system_prompt=system_prompt, history_messages=history,
            base_url=self.target.base_url, api_key=self._api_key(), token_tracker=tracker,
            stream=stream or None, timeout=self.settings.timeout_s, **kwargs,
        )

    async def _send_ollama(self, prompt, system_prompt, history, stream, tracker, kwargs):
        options = dict(kwargs.pop("options", None) or {})
        options.setdefault("num_ctx", _OLLAMA_NUM_CTX)
        if self.target.base_url:
            kwargs["host"] = self.target.base_url
        if stream:
            kwargs["stream"] = True
        return await self._load_binding()(
            self.target.model, prompt, system_prompt=system_prompt, history_messages=history,
            token_tracker=tracker, timeout=self.settings.timeout_s, options=options, **kwargs,
        )

    async def _send_anthropic(self, prompt, system_prompt, history, stream, tracker, kwargs):
        from anthropic import AsyncAnthropic

        client = AsyncAnthropic(api_key=self._api_key(), base_url=self.target.base_url,
                                timeout=self.settings.timeout_s, max_retries=0)
        # The Messages API takes the system prompt apart; a "system" turn in the history joins it.
        systems = [system_prompt or ""] + [str(m.get("content", "")) for m in history if m.get("role") == "system"]
        params: dict[str, Any] = {
            "model": self.target.model,
            "messages": [*(m for m in history if m.get("role") != "system"), {"role": "user", "content": prompt}],
            "max_tokens": kwargs.get("max_tokens") or _ANTHROPIC_MAX_TOKENS,
        }
        if any(systems):
            params["system"] = "\n\n".join(s for s in systems if s)
        for key in ("temperature", "top_p", "top_k", "stop_sequences"):
            if kwargs.get(key) is not None:
                params[key] = kwargs[key]
        # Anthropic has no JSON mode; LightRAG's keyword parser tolerates prose around the JSON.
        if not stream:
            try:
                response = await client.messages.create(**params)
            finally:
                await client.close()
            usage = getattr(response, "usage", None)
            if usage is not None:
                tracker.add_usage({"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens})
            return "".join(block.text for block in response.content if getattr(block, "type", "") == "text")
        try:
            events = await client.messages.create(**params, stream=True)
        except BaseException:
            await client.close()
            raise
        return self._anthropic_stream(client, events, tracker)

    @staticmethod
    async def _anthropic_stream(client: Any, events: Any, tracker: _Tracker) -> AsyncIterator[str]:
        input_tokens = output_tokens = 0
        seen = False
        try:
            async for event in events:
                kind = getattr(event, "type", "")
                if kind == "message_start":
                    usage = event.message.usage
                    input_tokens, output_tokens, seen = usage.input_tokens, usage.output_tokens, True
                elif kind == "message_delta" and getattr(event, "usage", None) is not None:
                    output_tokens, seen = event.usage.output_tokens, True
                elif kind == "content_block_delta" and getattr(event.delta, "text", None):
                    yield event.delta.text
            if seen:
                tracker.add_usage({"prompt_tokens": input_tokens, "completion_tokens": output_tokens})
        finally:
            await events.close()
            await client.close()


def make_llm_func(settings: LLMSettings, usage: LLMUsage | None = None, *,
                  backoff: Backoff | None = None) -> LLMClient:
    """An async callable with LightRAG's `llm_model_func` signature for `settings` (`provider:model`).

    Raises ConfigError for a bad spec or a missing API key. Counts into `usage` (also at `.usage`).
    """
    return LLMClient(settings, usage, backoff=backoff)


# -- doctor ----------------------------------------------------------------------------------------


@dataclass
class LLMCheck:
    ok: bool
    provider: str | None
    model: str | None
    base_url_host: str | None
    latency_s: float | None = None
    reply: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None


async def acheck_llm(settings: LLMSettings, *, timeout_s: float | None = None) -> LLMCheck:
    """One tiny call ("Reply with OK") without retries; errors come back redacted, never raised."""
    if not settings.model:
        return LLMCheck(ok=False, provider=None, model=None, base_url_host=None,
                        error="no LLM configured (set WIKIRAG_LLM or [llm] model)")
    try:
        target = _target(settings)
    except ConfigError as exc:
        return LLMCheck(ok=False, provider=None, model=settings.model, base_url_host=None, error=redact(str(exc)))
    quick = replace(settings, max_retries=0, concurrency=1,
                    timeout_s=min(settings.timeout_s, timeout_s or 30.0))
    check = LLMCheck(ok=False, provider=target.named, model=target.model, base_url_host=_host(target.base_url))
    usage = LLMUsage()
    started = time.perf_counter()
    try:
        client = LLMClient(quick, usage)
        # A small cap keeps a local model from rambling; OpenAI's own reasoning models refuse max_tokens.
        cap = {} if target.provider == "openai" and target.base_url is None else {"max_tokens": 16}
        reply = await client("Reply with OK", **cap)
        check.reply = str(reply).strip()[:80]
        check.ok = True
    except WikiragError as exc:
        check.error = redact(str(exc))
    except Exception as exc:  # an SDK missing or misbehaving: doctor reports, never crashes
        check.error = redact(f"{type(exc).__name__}: {exc}")
    check.latency_s = round(time.perf_counter() - started, 3)
    check.input_tokens, check.output_tokens = usage.input_tokens, usage.output_tokens
    return check


def check_llm(settings: LLMSettings, *, timeout_s: float | None = None) -> LLMCheck:
    """Sync twin of `acheck_llm` for the CLI."""
    return asyncio.run(acheck_llm(settings, timeout_s=timeout_s))


__all__ = [
    "Backoff", "KindUsage", "LLMCallError", "LLMCheck", "LLMClient", "LLMUsage", "acheck_llm", "check_llm",
    "describe_llm", "is_retryable", "lightrag_llm_kwargs", "make_llm_func", "parse_llm_spec", "redact",
]

