"""The live progress line of an index run with an LLM: notes done of the run's extract-routed notes, LLM
requests in flight, tokens and dollars spent so far against the estimate, an ETA; with `--batch`, the
batch's state. Plain text: the CLI shows it as its progress bar's description.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any


def _tokens(n: int) -> str:
    return f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.1f}k" if n >= 1e3 else str(n)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else (
        f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s")


@dataclass
class LiveRun:
    """What the progress line reads. `usage` is the run's llm.LLMUsage, `client` the LLM client (its
    `in_flight`), `price` the model's plan.prices.ModelPrice; any may be None (a fake LLM, no price)."""

    total: int = 0  # extract-routed notes this run extracts
    done: int = 0
    usage: Any = None
    client: Any = None
    price: Any = None
    estimate_usd: float | None = None
    batched: bool = False  # --batch: the tokens are billed at the batch discount
    batch_state: str = ""  # "--batch": the provider's state and request counts
    batch_done: int = 0
    batch_total: int = 0
    started: float = field(default_factory=time.monotonic)
    _base: tuple[int, int, int, int] = (0, 0, 0, 0)
    _begun: bool = False

    def begin(self) -> None:
        """A stage starts now (a batch's wait, the extraction): the ETA counts from here; the spend counts
        from the first call (a batch's answers stay in it)."""
        self.started = time.monotonic()
        if self.usage is not None and not self._begun:
            self._base = self._now()
            self._begun = True

    def _now(self) -> tuple[int, int, int, int]:
        u = self.usage
        return u.input_tokens, u.cached_input_tokens, u.output_tokens, u.cache_write_input_tokens

    def spent(self) -> tuple[int, int, int, int]:
        """(input, cached input, output, cache-written input) tokens since `begin`."""
        if self.usage is None:
            return 0, 0, 0, 0
        now = self._now()
        return now[0] - self._base[0], now[1] - self._base[1], now[2] - self._base[2], now[3] - self._base[3]

    def spent_usd(self) -> float | None:
        if self.price is None or self.usage is None:
            return None
        all_input, cached, output, written = self.spent()
        cached_rate = self.price.cached_input if self.price.cached_input is not None else self.price.input
        write_rate = self.price.cache_write if self.price.cache_write is not None else self.price.input
        usd = ((all_input - cached - written) * self.price.input + cached * cached_rate + written * write_rate
               + output * self.price.output) / 1e6
        return usd * (1 - self.price.batch_discount) if self.batched else usd

    def eta_s(self) -> float | None:
        done, total = (self.batch_done, self.batch_total) if self.batch_total else (self.done, self.total)
        elapsed = time.monotonic() - self.started
        if done <= 0 or total <= done or elapsed <= 0:
            return None
        return elapsed / done * (total - done)

    def line(self) -> str:
        parts = [f"extracting {self.done}/{self.total} notes"]
        if self.batch_state:
            parts.append(f"batch {self.batch_state} {self.batch_done}/{self.batch_total}")
        if self.client is not None and not self.batch_state:
            parts.append(f"{getattr(self.client, 'in_flight', 0)} in flight")
        fresh, cached, output, _ = self.spent()
        if self.usage is not None:
            parts.append(f"{_tokens(fresh)} in ({_tokens(cached)} cached) / {_tokens(output)} out")
        usd = self.spent_usd()
        if usd is not None:
            parts.append(f"${usd:,.2f}" + (f" of ~${self.estimate_usd:,.2f}" if self.estimate_usd else ""))
        eta = self.eta_s()
        if eta is not None:
            parts.append(f"ETA {_duration(eta)}")
        return " · ".join(parts)


class EmbeddingProgress:
    """A run's progress callback that also says how many texts were embedded so far, and says it again every
    second while a batch embeds: a first index of a few hundred notes is one batch, and its bar stood still
    for the minutes MiniLM took (a reviewer's 2,728 texts: 6 minutes at "0/325")."""

    def __init__(self, progress: Any, counter: Any) -> None:
        self.progress, self.counter, self.before = progress, counter, counter.texts
        self.last: tuple[str, int, int] | None = None
        self.shown = -1

    def __call__(self, stage: str, done: int, total: int) -> None:
        self.last = (stage, done, total)
        embedded = self.counter.texts - self.before
        self.shown = embedded
        self.progress(f"{stage} · {embedded:,} texts embedded" if embedded else stage, done, total)

    async def tick(self, seconds: float = 1.0) -> None:
        """Repeat the last line when the count moved (cancelled when the run ends)."""
        import asyncio

        while True:
            await asyncio.sleep(seconds)
            if self.last is not None and self.counter.texts - self.before != self.shown:
                self(*self.last)
