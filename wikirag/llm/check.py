"""`doctor --check-llm`: one tiny call to the configured provider, with what went wrong in one line.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace

from wikirag.errors import ConfigError, WikiragError
from wikirag.llm.client import LLMClient
from wikirag.llm.spec import provider_host, provider_target
from wikirag.llm.usage import LLMUsage
from wikirag.redaction import redact
from wikirag.settings import LLMSettings


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
        target = provider_target(settings)
    except ConfigError as exc:
        return LLMCheck(ok=False, provider=None, model=settings.model, base_url_host=None, error=redact(str(exc)))
    quick = replace(settings, max_retries=0, concurrency=1,
                    timeout_s=min(settings.timeout_s, timeout_s or 30.0))
    check = LLMCheck(ok=False, provider=target.named, model=target.model, base_url_host=provider_host(target.base_url))
    usage = LLMUsage()
    started = time.perf_counter()
    try:
        client = LLMClient(quick, usage)
        # A small cap keeps a local model from rambling; OpenAI's own reasoning models refuse max_tokens.
        cap = {} if target.provider == "openai" and target.base_url is None else {"max_tokens": 16}
        reply = await client("Reply with OK", **cap)
        check.reply = str(reply).strip()[:80]
        check.ok = True
    except WikiragError as exc:  # the check names the model already: its error need not start with it too
        check.error = redact(str(exc)).removeprefix(f"{target.named}:{target.model}: ")
    except Exception as exc:  # an SDK missing or misbehaving: doctor reports, never crashes
        check.error = redact(f"{type(exc).__name__}: {exc}")
    check.latency_s = round(time.perf_counter() - started, 3)
    check.input_tokens, check.output_tokens = usage.input_tokens, usage.output_tokens
    return check


def check_llm(settings: LLMSettings, *, timeout_s: float | None = None) -> LLMCheck:
    """Sync twin of `acheck_llm` for the CLI."""
    return asyncio.run(acheck_llm(settings, timeout_s=timeout_s))

