"""One scenario's LLM calls and tokens, note by note: extraction and gleaning calls per chunk (gleaning only
when it fits), identical prompts answered from LightRAG's cache, and description-summary calls replayed
merge by merge for vanilla; then the dollars at the model's price.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from wikirag.lightrag.prompts import (
    PromptSizes,
)
from wikirag.plan.chunk_plans import PlannedChunk
from wikirag.plan.cost_settings import CostSettings
from wikirag.plan.mentions import cap_mentions, sentence_names
from wikirag.plan.merges import MergeModel
from wikirag.plan.prices import ModelPrice
from wikirag.plan.results import ScenarioCost
from wikirag.plan.summaries import SummaryModel


class Scenario:
    """One scenario's LightRAG: documents go through extraction and merging in insertion order."""

    def __init__(self, s: CostSettings, sizes: PromptSizes, gleaning: int, price: ModelPrice, enc: Any, *,
                 lightrag_merges: bool, summaries: SummaryModel | None = None,
                 counts: dict[str, int] | None = None) -> None:
        self.s, self.sizes, self.gleaning, self.price, self.enc = s, sizes, gleaning, price, enc
        # vanilla: ainsert, so LightRAG drops duplicate documents and merges (summarises) descriptions.
        # wikirag: the pipeline calls LightRAG's extraction step only and merges fragments itself (no
        # duplicate-document check); its summaries are made once per record at the end of a run, counted
        # from the fragments a fresh index ends with (`summaries`, plan/summaries.py).
        self.lightrag_merges = lightrag_merges
        self.summaries = summaries
        self.merges = MergeModel(s, sizes, enc)
        self.seen_docs: dict[str, str] = {}
        self.seen_prompts: set[tuple[str, str]] = set()
        self.output_cap = s.max_total_records * s.record_tokens
        self._crumb_tokens = counts if counts is not None else {}  # a TokenCounts shared by the estimate's passes
        cacheable = price.cached_input is not None
        self.cache_min = price.cache_min_tokens if cacheable else math.inf
        self.system_cached = False  # the first extraction call writes the system prompt; later calls read it
        # What one gleaning call per chunk adds to the documents priced so far, whether or not this scenario
        # gleans: the same pass with gleaning toggled differs by exactly these (see toggled_gleaning).
        self.gleaning_terms = ScenarioCost()

    def document(self, path: str, content: str, chunks: list[PlannedChunk],
                 hint: int) -> tuple[ScenarioCost, str | None]:
        """The cost of inserting one document; (empty cost, first path) when LightRAG drops it as a duplicate."""
        cost = ScenarioCost(notes=1, chunks=len(chunks))
        if not content:
            return cost, None
        if self.lightrag_merges:
            if content in self.seen_docs:
                return ScenarioCost(), self.seen_docs[content]
            self.seen_docs[content] = path
        sz, s = self.sizes, self.s
        entity_counts: dict[str, int] = {}
        relation_counts: dict[tuple[str, str], int] = {}
        calls = glean = tokens_in = tokens_out = cached = embedded = extract_in = glean_in_total = records = 0
        glean_out = glean_cached = glean_written = written = 0
        for chunk in chunks:
            embedded += chunk.tokens
            names = chunk.names if chunk.names is not None else sentence_names(chunk.text)
            if not self.lightrag_merges:  # only the vector count needs them: about one record a name
                records += min(sum(map(len, names)), s.max_total_records)
            else:
                entities, relations = cap_mentions(names, s.max_entity_records, s.max_total_records)
                if len(chunks) == 1:  # the common case: one fragment each
                    entity_counts, relation_counts = dict.fromkeys(entities, 1), dict.fromkeys(relations, 1)
                else:
                    for e in entities:
                        entity_counts[e] = entity_counts.get(e, 0) + 1
                    for r in relations:
                        relation_counts[r] = relation_counts.get(r, 0) + 1
            # LightRAG's LLM cache key is the prompt; wikirag inserts the hint after the key is taken
            key = (chunk.text, chunk.breadcrumb)
            if key in self.seen_prompts:  # the same prompt again: LightRAG's LLM cache answers it
                continue
            self.seen_prompts.add(key)
            if self.summaries is not None:
                if chunk.names is not None:  # a note's (or pack's) names, the same list in every pass
                    self.summaries.chunk_names(names)
                else:
                    self.summaries.chunk(*cap_mentions(names, s.max_entity_records, s.max_total_records))
            user = sz.user_fixed + chunk.tokens + hint
            if chunk.breadcrumb:
                user += sz.section_fixed + self.crumb_tokens(chunk.breadcrumb)
            out = round(min(s.output_ratio * chunk.tokens, self.output_cap))
            calls += 1
            tokens_in += sz.system + user
            extract_in += sz.system + user
            tokens_out += out
            if sz.system >= self.cache_min and self.system_cached:
                cached += sz.system
            elif sz.system >= self.cache_min:
                written += sz.system
                self.system_cached = True
            glean_in = sz.system + user + out + sz.continue_prompt
            if glean_in <= s.max_extract_input_tokens:
                glean += 1
                glean_in_total += glean_in
                glean_out += round(s.gleaning_output_ratio * out)
                if sz.system + user >= self.cache_min:  # the extraction call just sent this prefix
                    glean_cached += sz.system + user
            if sz.system + user >= self.cache_min:  # with gleaning on, the extraction call caches its first turn
                glean_written += user if sz.system >= self.cache_min else sz.system + user
        terms = self.gleaning_terms
        terms.gleaning_calls += glean
        terms.gleaning_input_tokens += glean_in_total
        terms.output_tokens += glean_out
        terms.cached_input_tokens += glean_cached
        terms.cache_write_tokens += glean_written
        if self.gleaning > 0:
            tokens_in += glean_in_total
            tokens_out += glean_out
            cached += glean_cached
            written += glean_written
        else:
            glean = glean_in_total = 0
        cost.extraction_calls, cost.gleaning_calls = calls, glean
        cost.extraction_input_tokens, cost.gleaning_input_tokens = extract_in, glean_in_total
        records += len(entity_counts) + len(relation_counts)
        cost.embedding_tokens = embedded + round(records * s.embed_record_tokens)
        for counts, is_relation in ((entity_counts, False), (relation_counts, True)):
            if not self.lightrag_merges:
                break
            for summary_in, summary_out in self.merges.merge(counts, is_relation):
                cost.summary_calls += 1
                cost.summary_input_tokens += summary_in
                tokens_in += summary_in
                tokens_out += summary_out
        cost.input_tokens, cost.output_tokens, cost.cached_input_tokens = tokens_in, tokens_out, cached
        cost.cache_write_tokens = written
        cost.llm_calls = calls + glean + cost.summary_calls
        price_cost(cost, self.price)
        return cost, None

    def crumb_tokens(self, crumb: str) -> int:
        if crumb not in self._crumb_tokens:
            self._crumb_tokens[crumb] = len(self.enc.encode_ordinary(crumb))
        return self._crumb_tokens[crumb]


def toggled_gleaning(total: ScenarioCost, terms: ScenarioCost, gleaning: bool, price: ModelPrice) -> ScenarioCost:
    """`total` (a scenario's documents and summaries) as the same pass prices it with gleaning on (`gleaning`)
    or off, from the `gleaning_terms` its Scenario collected: gleaning changes no other figure (the prompts
    and the records they name stay the same)."""
    sign = 1 if gleaning else -1
    out = replace(total)
    out.gleaning_calls += sign * terms.gleaning_calls
    out.gleaning_input_tokens += sign * terms.gleaning_input_tokens
    out.llm_calls += sign * terms.gleaning_calls
    out.input_tokens += sign * terms.gleaning_input_tokens
    out.output_tokens += sign * terms.output_tokens
    out.cached_input_tokens += sign * terms.cached_input_tokens
    out.cache_write_tokens += sign * terms.cache_write_tokens
    price_cost(out, price)
    return out


def price_cost(cost: ScenarioCost, price: ModelPrice) -> None:
    """Fill the three dollar figures of `cost` from its token counts. With caching, input is read from the
    cache, written into it (Anthropic bills a write at 1.25x input), or neither."""
    plain = cost.input_tokens * price.input + cost.output_tokens * price.output
    cached_rate = price.cached_input if price.cached_input is not None else price.input
    write_rate = price.cache_write if price.cache_write is not None else price.input
    fresh = cost.input_tokens - cost.cached_input_tokens - cost.cache_write_tokens
    cached = (fresh * price.input + cost.cached_input_tokens * cached_rate + cost.cache_write_tokens * write_rate
              + cost.output_tokens * price.output)
    cost.usd = plain / 1e6
    cost.usd_cached = cached / 1e6
    cost.usd_batch = plain * (1 - price.batch_discount) / 1e6

