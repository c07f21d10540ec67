"""LightRAG's own extraction step on inputs wikirag chooses: a note's stored chunks, a section of it, or a
pack of small notes that is never stored.

`operate.extract_entities` is called as `LightRAG._process_extract_entities` calls it (the instance's global
config, its role LLM functions, so ours with the hint, and its LLM cache), with one difference: the chunk
store it is handed only collects the cache keys each input used. LightRAG would otherwise record them on a
stored chunk (`llm_cache_list`), which a pack does not have; wikirag keeps them in its ledger instead.
"""

from __future__ import annotations

from typing import Any

from wikirag.lightrag.guard import import_lightrag


class _CacheKeys:
    """Stands in for the chunk store at the one place extraction touches it (`update_chunk_cache_list`)."""

    def __init__(self) -> None:
        self.keys: dict[str, list[str]] = {}

    async def get_by_id(self, chunk_id: str) -> dict[str, Any]:
        return {"llm_cache_list": list(self.keys.get(chunk_id, []))}

    async def upsert(self, data: dict[str, dict[str, Any]]) -> None:
        for chunk_id, record in data.items():
            self.keys[chunk_id] = list(record.get("llm_cache_list", []))


async def extract_inputs(rag: Any, inputs: dict[str, dict[str, Any]]) -> tuple[list[tuple[dict, dict]],
                                                                            dict[str, list[str]]]:
    """Run extraction on `inputs` (id -> LightRAG chunk dict: content, tokens, chunk_order_index,
    full_doc_id, file_path, optional heading). Returns LightRAG's per-input (nodes, edges), in input order,
    and the LLM cache keys each input used. Raises when the LLM fails after its retries."""
    import_lightrag()
    from lightrag.operate import extract_entities

    collector = _CacheKeys()
    results = await extract_entities(inputs, global_config=rag._build_global_config(),
                                     llm_response_cache=rag.llm_response_cache, text_chunks_storage=collector)
    return results, collector.keys


async def drop_cached(rag: Any, keys: list[str]) -> None:
    """Forget these LLM cache entries (their hint changed: LightRAG keys the prompt before the hint)."""
    if keys:
        await rag.llm_response_cache.delete(sorted(set(keys)))
