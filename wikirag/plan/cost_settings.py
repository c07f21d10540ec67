"""The cost model's settings (`[cost]` in wikirag.toml, plus flags): the model to price, chunking as the
pipeline runs it, LightRAG's extraction knobs (None: LightRAG's installed default), and the documented
output assumptions. Also LightRAG's prompts and their sizes for these settings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from wikirag.errors import ConfigError
from wikirag.lightrag.prompts import (
    PromptSizes,
    lightrag_defaults,
    render_prompts,
)
from wikirag.lightrag.prompts import prompt_sizes as lightrag_prompt_sizes
from wikirag.lightrag.tokens import DEFAULT_ENCODING
from wikirag.plan.prices import ModelPrice, PriceTable
from wikirag.settings import IndexSettings, settings_from_mapping


@dataclass
class CostSettings:
    # The model to price, as in the price table or "provider:model"; LightRAG's own default is gpt-4o-mini.
    model: str = "gpt-4o-mini"
    prices_file: str | None = None  # a user price table merged over the shipped one
    price_in: float | None = None  # USD per 1M input tokens, overriding the table
    price_out: float | None = None
    price_cached_in: float | None = None
    # The tokenizer LightRAG chunks and counts with (wikirag passes IndexSettings.encoding).
    encoding: str = DEFAULT_ENCODING
    # wikirag's chunking (IndexSettings) and whether chunks carry LightRAG's `---Section Context---` block.
    chunk_token_size: int = IndexSettings.chunk_token_size
    chunk_overlap_token_size: int = IndexSettings.chunk_overlap_token_size
    section_context: bool = True
    default_note_type: str = "note"  # IndexSettings.default_note_type: the hint names the note's type
    # What a vanilla LightRAG user runs: LightRAG's default fixed-token chunking.
    vanilla_chunk_token_size: int = 1200
    vanilla_chunk_overlap_token_size: int = 100
    # LightRAG's extraction knobs; None means "LightRAG's installed default" (lightrag.constants).
    gleaning: int | None = IndexSettings.gleaning  # wikirag's own default (off); None: LightRAG's default
    vanilla_gleaning: int | None = None
    force_llm_summary_on_merge: int | None = None
    summary_max_tokens: int | None = None
    summary_context_size: int | None = None
    summary_length_recommended: int | None = None
    max_extract_input_tokens: int | None = None
    max_total_records: int | None = None
    max_entity_records: int | None = None
    max_source_ids_per_entity: int | None = None
    max_source_ids_per_relation: int | None = None
    language: str | None = None
    # Output assumptions (docs/cost-model.md says where each comes from).
    output_ratio: float = 2.38  # extraction output tokens per chunk token: LightRAG's worked examples
    record_tokens: float = 44.0  # tokens per output record (entity or relation line), same source
    gleaning_output_ratio: float = 0.25  # gleaning output as a share of the first answer: assumption
    description_tokens: float = 19.0  # tokens per extracted description, LightRAG's worked examples
    embed_record_tokens: float = 30.0  # tokens embedded per entity/relation vector (name + description)
    hint: bool = True  # extract-routed notes carry the hint header in every chunk
    pack_max_tokens: int = IndexSettings.pack_max_tokens  # small-note packing (IndexSettings), 0: off

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any] | None) -> CostSettings:
        """Settings from the `[cost]` table of wikirag.toml; unknown keys are a ConfigError."""
        return settings_from_mapping(cls, values or {}, "cost")

    @classmethod
    def from_config(cls, config: Any, values: Mapping[str, Any] | None = None) -> CostSettings:
        """Chunking, tokenizer and note type from the config's [index], the model from [llm], then the
        config's [cost] table, then `values` (command-line flags). A relative `prices_file` is taken from
        the vault folder."""
        merged = {**(getattr(config, "sections", {}) or {}).get("cost", {}), **(values or {})}
        base = cls.from_mapping(merged)
        changes: dict[str, Any] = {
            "chunk_token_size": config.index.chunk_token_size,
            "chunk_overlap_token_size": config.index.chunk_overlap_token_size,
            "encoding": config.index.encoding,
            "default_note_type": config.index.default_note_type,
            "pack_max_tokens": config.index.pack_max_tokens,
        }
        if "gleaning" not in merged:  # the pipeline's own setting, unless [cost] asks "what if"
            changes["gleaning"] = config.index.gleaning
        if config.llm.model and "model" not in merged:
            changes["model"] = config.llm.model
        if base.prices_file and not Path(base.prices_file).is_absolute():
            changes["prices_file"] = str(Path(config.vault) / base.prices_file)
        return replace(base, **changes)

    def resolved(self) -> CostSettings:
        """A copy with every None filled from LightRAG's installed defaults."""
        defaults = lightrag_defaults()
        changes = {k: v for k, v in defaults.items() if getattr(self, k) is None}
        if self.vanilla_gleaning is None:
            changes["vanilla_gleaning"] = defaults["gleaning"]
        return replace(self, **changes)

    def price(self, table: PriceTable | None = None) -> ModelPrice:
        """The model's price, with --price-in/--price-out applied (enough on their own for any model)."""
        if self.price_in is not None and self.price_out is not None:
            try:
                base = (table or PriceTable.load(self.prices_file)).get(self.model)
            except ConfigError:
                base = ModelPrice(self.model, cached_input=None)
        else:
            base = (table or PriceTable.load(self.prices_file)).get(self.model)
        changes: dict[str, Any] = {}
        if base.provider and base.provider not in CACHING_PROVIDERS and base.cached_input is not None:
            changes["cached_input"] = None  # the provider could cache, but wikirag does not set it up there
        given = {"input": self.price_in, "output": self.price_out, "cached_input": self.price_cached_in}
        given = {key: value for key, value in given.items() if value is not None}
        if given:  # the user's own figures: the table (and its date) no longer says what they are
            changes.update(given, source="command line")
        return _checked(replace(base, **changes))


def _checked(price: ModelPrice) -> ModelPrice:
    """A price is a finite number >= 0: a string ended in a TypeError, a negative or NaN one in a bill of -$3."""
    for key in ("input", "output", "cached_input", "cache_write"):
        value = getattr(price, key)
        if value is None and key in ("cached_input", "cache_write"):
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            where = "--price-in/--price-out or [cost]" if price.source == "command line" else price.source
            raise ConfigError(f"{where or 'prices'}: the {key} price of {price.name!r} is {value!r}; give USD per "
                              "1M tokens, a number ≥ 0")
    return price


# Providers whose prompt caching wikirag's requests really get: OpenAI caches a repeated prefix by itself
# (wikirag keeps LightRAG's system prompt first and identical, the hint in the user turn); for Anthropic,
# llm/anthropic.py marks the extraction system prompt with cache_control. Elsewhere `usd_cached` = `usd`.
CACHING_PROVIDERS = ("openai", "anthropic")


def stock_lightrag_price(price: ModelPrice) -> ModelPrice:
    """The price stock LightRAG pays (the `vanilla` scenario): its own Anthropic binding marks no cache
    breakpoint, so there it reads nothing from the prompt cache; OpenAI caches a repeated prefix by itself."""
    return replace(price, cached_input=None, cache_write=None) if price.provider == "anthropic" else price


def render_extraction_prompts(settings: CostSettings) -> dict[str, str]:
    """LightRAG's extraction, gleaning and summary prompts for these settings (lightrag/prompts.py)."""
    s = settings.resolved()
    return render_prompts(s.language, s.max_total_records, s.max_entity_records, s.summary_length_recommended)


def prompt_sizes(settings: CostSettings | None = None, *, use_disk_cache: bool = True) -> PromptSizes:
    """Token sizes of LightRAG's prompts for these settings (measured once per LightRAG version)."""
    s = (settings or CostSettings()).resolved()
    return lightrag_prompt_sizes(s.encoding, s.language, s.max_total_records, s.max_entity_records,
                                 s.summary_length_recommended, use_disk_cache=use_disk_cache)

