"""LightRAG's own description summary (`operate._handle_entity_relation_summary`) on a description list
wikirag merged: its prompt, its map-reduce over long lists, its LLM cache (keyed by the prompt, so by the
name and the fragment list, and by the model). The LLM is the instance's extraction role function: wikirag's
client behind LightRAG's queue (retries, usage accounting, `[llm] concurrency`). Every answer reaches the
LLM cache through the journal (answers.py), so a crash loses no paid summary and an unchanged list is
answered from the cache on any later run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wikirag.lightrag.guard import import_lightrag


@dataclass(frozen=True)
class SummaryLimits:
    """LightRAG's summary triggers and sizes, as the instance was built with them."""

    force: int  # force_llm_summary_on_merge
    max_tokens: int  # summary_max_tokens
    context: int  # summary_context_size
    length: int  # summary_length_recommended


def summary_limits(rag: Any) -> SummaryLimits:
    return SummaryLimits(int(rag.force_llm_summary_on_merge), int(rag.summary_max_tokens),
                         int(rag.summary_context_size), int(rag.summary_length_recommended))


async def summarise(rag: Any, kind: str, name: str, descriptions: list[str], separator: str = "\n") -> str | None:
    """LightRAG's summary of `descriptions` for an entity (`kind` "Entity", `name` its name) or a relation
    ("Relation", "(src, tgt)" as LightRAG names it). None when LightRAG's rule calls for no LLM (the list is
    joined then, which the caller's own merge already does). Raises when the LLM fails after its retries."""
    import_lightrag()
    from lightrag.operate import _handle_entity_relation_summary

    text, used = await _handle_entity_relation_summary(kind, name, descriptions, separator,
                                                      rag._build_global_config(), rag.llm_response_cache)
    return text if used else None


async def record_summaries(rag: Any, jobs: list[tuple[str, str, list[str]]]) -> list[dict[str, Any]]:
    """`--batch`: the summary requests `summarise` would send now for these (kind, name, descriptions), without
    an LLM, each with the cache key its answer must be stored under (as extraction.record_prompts). A long
    list's second map-reduce level reads the first level's answers: it is recorded once they are cached."""
    import_lightrag()
    from lightrag.operate import _handle_entity_relation_summary

    from wikirag.lightrag.extraction import BATCH_TOKEN, _ReadOnlyCache, _Recorder

    recorder = _Recorder()
    config = rag._build_global_config()
    config["role_llm_funcs"] = {**config["role_llm_funcs"], "extract": recorder}
    cache = _ReadOnlyCache(rag.llm_response_cache)
    for kind, name, descriptions in jobs:
        await _handle_entity_relation_summary(kind, name, descriptions, "\n", config, cache)
    out = []
    for token, call in recorder.calls.items():
        if token not in cache.keys or BATCH_TOKEN in call["prompt"]:
            continue  # not cacheable, or a reduce step over stand-in answers
        key, entry = cache.keys[token]
        out.append({"key": key, "entry": {k: v for k, v in entry.items() if k != "return"}, "kind": "summary",
                    **call})
    return out
