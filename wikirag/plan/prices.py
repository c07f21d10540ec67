"""What tokens cost: the shipped price table (wikirag/data/prices.toml, list prices with their date) with a
user's price file merged over it, looked up by model name, alias or `provider:model`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from wikirag.errors import ConfigError
from wikirag.settings import read_price_files

LOCAL_PROVIDERS = ("ollama", "llamacpp", "llama.cpp", "lmstudio", "vllm", "local")


@dataclass
class ModelPrice:
    """USD per 1M tokens for one model."""

    name: str
    provider: str = ""
    input: float = 0.0
    output: float = 0.0
    cached_input: float | None = None  # None: the provider does not cache prompts
    cache_write: float | None = None  # writing a prefix into the prompt cache; None: the input price
    batch_discount: float = 0.0
    cache_min_tokens: int = 1024
    aliases: list[str] = field(default_factory=list)
    source: str = ""  # where this price came from: the shipped table, a user file, the command line


@dataclass
class PriceTable:
    models: dict[str, ModelPrice] = field(default_factory=dict)
    as_of: str = ""
    source: str = ""

    @classmethod
    def load(cls, user_file: str | Path | None = None) -> PriceTable:
        """The shipped table (wikirag/data/prices.toml), with `user_file`'s entries merged over it."""
        table = cls()
        for data, origin in read_price_files(user_file):
            table._merge(data, origin)
        return table

    def _merge(self, data: Mapping[str, Any], origin: str) -> None:
        meta = data.get("table", {})
        self.as_of = str(meta.get("as_of", self.as_of))
        self.source = str(meta.get("source", self.source))
        known = set(ModelPrice.__dataclass_fields__) - {"name", "source"}
        for name, entry in (data.get("models") or {}).items():
            if not isinstance(entry, dict) or set(entry) - known:
                raise ConfigError(f"{origin}: [models.{name!r}] has unknown keys {sorted(set(entry) - known)}")
            base = self.models.get(name, ModelPrice(name))
            self.models[name] = replace(base, **entry, source=origin)

    def get(self, model: str) -> ModelPrice:
        """Find `model` by name, alias or `provider:name`, or as the longest table name it starts with
        (`gpt-4o-mini-2024-07-18` -> `gpt-4o-mini`). Local providers (`ollama:...`) cost nothing."""
        provider, _, bare = model.rpartition(":") if ":" in model else ("", "", model)
        if model.count(":") > 1:  # "ollama:qwen2.5:7b"
            provider, bare = model.split(":", 1)[0], model.split(":", 1)[1]
        candidates = [model, bare]
        for name in candidates:
            if name in self.models:
                return self.models[name]
            for price in self.models.values():
                if name in price.aliases:
                    return price
        if provider.lower() in LOCAL_PROVIDERS and "local" in self.models:
            return self.models["local"]
        prefixes = [n for n in self.models if bare.startswith(n)]
        if prefixes:
            return self.models[max(prefixes, key=len)]
        raise ConfigError(
            f"no price for model {model!r}: give --price-in and --price-out, or add it to a prices file "
            f"(known: {', '.join(sorted(self.models))})"
        )

