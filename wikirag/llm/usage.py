"""What the LLM cost, as the provider reported it: calls, retries, failures and tokens, per call kind.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass
class KindUsage:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0


@dataclass
class LLMUsage:
    """What the LLM cost, from the provider's own usage reports.

    `calls` counts LightRAG's calls (each once, however many attempts); `retries` the extra attempts;
    `failures` the calls that raised in the end. Tokens include failed and retried attempts when the
    provider billed them. `cached_input_tokens` is the part of `input_tokens` the provider reported as read
    from its prompt cache (OpenAI `prompt_tokens_details.cached_tokens`, Anthropic `cache_read_input_tokens`);
    `cache_write_input_tokens` the part written into it (Anthropic `cache_creation_input_tokens`, billed at
    1.25x input).
    `estimated_calls` were counted with tiktoken because the provider reported no
    usage. `by_kind`: extract, glean, summary, keywords, answer, other.
    """

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_input_tokens: int = 0
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

    def add_tokens(self, kind: str, input_tokens: int, output_tokens: int, *, estimated: bool = False,
                   cached_input_tokens: int = 0, cache_write_input_tokens: int = 0) -> None:
        with self._lock:
            self.input_tokens += input_tokens
            self.output_tokens += output_tokens
            self.cached_input_tokens += cached_input_tokens
            self.cache_write_input_tokens += cache_write_input_tokens
            per_kind = self._kind(kind)
            per_kind.input_tokens += input_tokens
            per_kind.output_tokens += output_tokens
            per_kind.cached_input_tokens += cached_input_tokens
            per_kind.cache_write_input_tokens += cache_write_input_tokens
            if estimated:
                self.estimated_calls += 1

    def add_retry(self) -> None:
        with self._lock:
            self.retries += 1

    def add_failure(self) -> None:
        with self._lock:
            self.failures += 1


class UsageTracker:
    """LightRAG's `token_tracker` protocol (`add_usage(dict)`), collecting one attempt's reported usage."""

    def __init__(self) -> None:
        self.reported = False
        self.input_tokens = 0
        self.output_tokens = 0
        self.cached_input_tokens = 0
        self.cache_write_input_tokens = 0

    def add_cached(self, tokens: int, written: int = 0) -> None:
        """Prompt-cache reads (and writes) the provider reported (LightRAG's OpenAI binding drops them from its
        report)."""
        self.cached_input_tokens += max(int(tokens or 0), 0)
        self.cache_write_input_tokens += max(int(written or 0), 0)

    def add_usage(self, counts: dict[str, Any]) -> None:
        input_tokens = int(counts.get("prompt_tokens") or 0)
        output_tokens = int(counts.get("completion_tokens") or 0)
        # The OpenAI binding reports zeros when a response has `usage: null`: that is no report.
        if input_tokens or output_tokens:
            self.reported = True
            self.input_tokens += input_tokens
            self.output_tokens += output_tokens

