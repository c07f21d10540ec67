"""Description merges replayed as LightRAG would run them for vanilla indexing: which entities and relations
reach the summary threshold, and what their summary calls cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from wikirag.lightrag.prompts import PromptSizes

if TYPE_CHECKING:
    from wikirag.plan.cost_settings import CostSettings


class MergeModel:
    """LightRAG's merge of extracted descriptions, replayed on fragment counts.

    Per document, every entity (relation) collects one description per chunk that names it; LightRAG
    joins them to what is stored and calls the LLM (`_handle_entity_relation_summary`) when the list
    reaches `force_llm_summary_on_merge` fragments or `summary_max_tokens` tokens, map-reducing lists
    longer than `summary_context_size` tokens. A summary replaces the list with one fragment. Chunks past
    `max_source_ids_per_*` (LightRAG's KEEP policy) add nothing. Every fragment is `description_tokens`.
    """

    def __init__(self, s: CostSettings, sizes: PromptSizes, enc: Any) -> None:
        self.s, self.sizes, self.enc = s, sizes, enc
        self.stored: dict[Any, tuple[int, float]] = {}  # key -> (fragments, tokens)
        self.chunks: dict[Any, int] = {}
        self.name_tokens: dict[Any, int] = {}

    def merge(self, counts: Mapping[Any, int], is_relation: bool) -> list[tuple[int, int]]:
        """Merge one document's fragment counts; returns its summary calls as (input, output) tokens."""
        s = self.s
        cap = s.max_source_ids_per_relation if is_relation else s.max_source_ids_per_entity
        force, max_tokens, context = s.force_llm_summary_on_merge, s.summary_max_tokens, s.summary_context_size
        desc = s.description_tokens
        calls: list[tuple[int, int]] = []
        stored, chunks = self.stored, self.chunks
        for key, new in counts.items():
            seen = chunks.get(key, 0)
            if seen + new > cap:
                new = max(0, cap - seen)
                if new == 0:
                    continue
            chunks[key] = seen + new
            n, tokens = stored.get(key, (0, 0.0))
            n, tokens = n + new, tokens + new * desc
            if n <= 1 or (n < force and tokens < max_tokens and (tokens <= context or n <= 2)):
                stored[key] = (n, tokens)  # joined without the LLM (the common case)
                continue
            groups, n, tokens = self._summarize(n, tokens)
            name_tokens = self.name_tokens.get(key)
            if name_tokens is None:
                name = f"({key[0]}, {key[1]})" if is_relation else key
                name_tokens = self.name_tokens[key] = len(self.enc.encode_ordinary(name))
            calls += [summary_call(group_n, group_tokens, name_tokens, self.sizes, s) for group_n, group_tokens
                      in groups]
            stored[key] = (n, tokens)
        return calls

    def _summarize(self, n: int, tokens: float) -> tuple[list[tuple[int, float]], int, float]:
        """LightRAG's summary loop on `n` equal fragments: (calls as (fragments, tokens), stored after)."""
        return summary_rounds([tokens / n] * n, self.s)


def summary_call(fragments: int, tokens: float, name_tokens: int, sizes: PromptSizes,
                 s: CostSettings) -> tuple[int, int]:
    """One summary call's (input, output) tokens: the prompt around the name and the JSON-lined fragments
    (cut at `summary_context_size`), and at most `summary_length_recommended` out."""
    sent = min(tokens, s.summary_context_size)
    return (round(sizes.summary_fixed + name_tokens + sent + fragments * sizes.summary_fragment),
            round(min(s.summary_length_recommended, tokens)))


def summary_rounds(sizes: list[float], s: CostSettings) -> tuple[list[tuple[int, float]], int, float]:
    """LightRAG's summary loop (`_handle_entity_relation_summary`) on fragments of these token sizes: its
    calls as (fragments, tokens), and the fragments and tokens left stored after it."""
    current = list(sizes)
    calls: list[tuple[int, float]] = []
    if len(current) < 2:  # one description is stored as it is
        return calls, len(current), sum(current)
    while True:
        total = sum(current)
        if total <= s.summary_context_size or len(current) <= 2:
            if len(current) < s.force_llm_summary_on_merge and total < s.summary_max_tokens:
                return calls, len(current), total
            calls.append((len(current), total))
            return calls, 1, min(s.summary_length_recommended, total)
        groups: list[list[float]] = []
        group: list[float] = []
        group_tokens = 0.0
        for size in current:
            if group_tokens + size > s.summary_context_size and group:
                if len(group) == 1:
                    groups.append(group + [size])
                    group, group_tokens = [], 0.0
                else:
                    groups.append(group)
                    group, group_tokens = [size], size
            else:
                group.append(size)
                group_tokens += size
        if group:
            groups.append(group)
        current = []
        for g in groups:
            if len(g) == 1:
                current.append(g[0])
            else:
                calls.append((len(g), sum(g)))
                current.append(min(s.summary_length_recommended, sum(g)))
