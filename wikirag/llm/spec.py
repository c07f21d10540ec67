"""The `provider:model` spec: which wire a provider speaks, its key variable, and what `doctor` may show
about it (never the key).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from wikirag.errors import ConfigError
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
PLACEHOLDER_KEY = "not-needed"


MAX_RETRIES = 20  # with the backoff's 30 s cap, about ten minutes for one failing call

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


def provider_target(settings: LLMSettings) -> _Target:
    named, model = parse_llm_spec(settings.model)
    base_url = (settings.base_url or "").strip() or None
    provider = named
    if named in OPENAI_COMPATIBLE:
        provider, base_url = "openai", base_url or OPENAI_COMPATIBLE[named]
    if provider == "ollama" and base_url:
        base_url = re.sub(r"/v1/?$", "", base_url.rstrip("/"))  # the native API lives at the root
    if settings.concurrency < 0:
        raise ConfigError(f"[llm] concurrency must be at least 1 (or 0 for the provider's default), "
                          f"got {settings.concurrency}")
    if settings.timeout_s <= 0:
        raise ConfigError(f"[llm] timeout_s must be positive, got {settings.timeout_s}")
    if not 0 <= settings.max_retries <= MAX_RETRIES:  # a million retries kept a stopped run asking for hours
        raise ConfigError(f"[llm] max_retries must be from 0 to {MAX_RETRIES}, got {settings.max_retries}")
    return _Target(provider=provider, model=model, base_url=base_url, named=named)


def effective_concurrency(settings: LLMSettings) -> int:
    """`[llm] concurrency`, or with 0 (the default) 16 for hosted APIs, 4 for Ollama and local servers."""
    return settings.effective_concurrency()


def provider_host(base_url: str | None) -> str | None:
    """scheme://host:port only: a base URL may carry user:password or a query-string key."""
    if not base_url:
        return None
    parts = urlsplit(base_url)
    if not parts.hostname:
        return None
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}" if parts.scheme else f"{parts.hostname}{port}"


def key_required(target: _Target) -> bool:
    if target.provider == "ollama":
        return False
    return target.base_url is None and not (target.provider == "openai" and os.environ.get("OPENAI_API_BASE"))


def describe_llm(settings: LLMSettings) -> dict[str, Any]:
    """Plain data for `doctor` and `--json`: provider, model, base URL host, the key variable that
    applies and whether it is set (never its value). Raises ConfigError for a malformed spec."""
    limits = {"concurrency": effective_concurrency(settings) if settings.model else settings.concurrency,
              "timeout_s": settings.timeout_s,
              "max_retries": settings.max_retries}
    if not settings.model:
        return {"configured": False, "provider": None, "wire": None, "model": None, "base_url_host": None,
                "key_env": None, "key_set": False, "key_required": False, **limits}
    target = provider_target(settings)
    key_env = KEY_ENV[target.provider]
    key_set, required = bool(os.environ.get(key_env)), key_required(target)
    # A local server needs no key: name the variable only when it is required or set (then it is sent).
    return {"configured": True, "provider": target.named, "wire": target.provider, "model": target.model,
            "base_url_host": provider_host(target.base_url), "key_env": key_env if required or key_set else None,
            "key_set": key_set, "key_required": required, **limits}

