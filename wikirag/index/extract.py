"""LLM extraction for extract-routed notes: LightRAG's own extraction, hinted, cleaned, kept as fragments.

LightRAG's extraction step (`operate.extract_entities`, reached through the instance's
`_process_extract_entities`) is used as is: its prompts, its output parser, its LLM cache keyed by the
model (`llm_model_name`). What it returns per chunk is not merged into the graph by LightRAG; it becomes
entity/relation fragments in wikirag's ledger, merged with the note's link structure by the same code
that merges injected notes. That keeps one derivation for the whole graph, so an edited or deleted
extract-routed note removes exactly its old contribution, and the store still equals a fresh index.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wikirag.graph.hygiene import EntityNames, HygieneLog
from wikirag.graph.records import ChunkRecord, EntityFragment, RelationFragment
from wikirag.lightrag.hinting import HintingLLM
from wikirag.lightrag.ids import xml_safe

EXTRACTED_RANK = 2


@dataclass
class Extraction:
    entities: list[EntityFragment] = field(default_factory=list)
    relations: list[RelationFragment] = field(default_factory=list)
    cache_keys: list[str] = field(default_factory=list)


async def purge_cached_extractions(rag: Any, chunk_ids: list[str]) -> int:
    """Drop the LLM cache entries LightRAG recorded for these chunks (their hint changed)."""
    records = await rag.text_chunks.get_by_ids(chunk_ids)
    keys = sorted({k for r in records if r for k in r.get("llm_cache_list", []) or []})
    if keys:
        await rag.llm_response_cache.delete(keys)
    return len(keys)


async def extract_note(
    rag: Any,
    hinting: HintingLLM,
    path: str,
    doc_id: str,
    chunks: list[ChunkRecord],
    hint: str,
    names: EntityNames,
    log: HygieneLog,
) -> Extraction:
    """Run LightRAG's extraction on a note's chunks (already in text_chunks) and clean the result."""
    if not chunks:
        return Extraction()
    for chunk in chunks:
        hinting.hints[chunk.content] = hint
    payload = {
        c.id: {
            "content": c.content,
            "tokens": c.tokens,
            "chunk_order_index": c.order,
            "full_doc_id": doc_id,
            "file_path": path,
            **({"heading": c.heading} if c.heading else {}),
        }
        for c in chunks
    }
    try:
        # 1.5.x: the instance method wraps operate.extract_entities with the instance's global config,
        # role LLM functions (ours, hinted) and its cache. Raises when the LLM fails after retries.
        results = await rag._process_extract_entities(payload)
    finally:
        for chunk in chunks:
            hinting.hints.pop(chunk.content, None)
    texts = {c.id: c.content for c in chunks}
    extraction = Extraction()
    for maybe_nodes, maybe_edges in results:
        _clean(maybe_nodes, maybe_edges, texts, hint, names, path, log, extraction)
    records = await rag.text_chunks.get_by_ids(list(texts))
    extraction.cache_keys = sorted({k for r in records if r for k in r.get("llm_cache_list", []) or []})
    return extraction


def _clean(maybe_nodes: dict[str, list[dict]], maybe_edges: dict[Any, list[dict]], texts: dict[str, str],
           hint: str, names: EntityNames, path: str, log: HygieneLog, out: Extraction) -> None:
    kept: dict[str, str] = {}  # extracted name -> canonical name, for grounded entities only
    for name, records in sorted(maybe_nodes.items()):
        for record in records:
            chunk_id = record.get("source_id", "")
            entity_type = str(record.get("entity_type") or "unknown").lower()
            if names.is_placeholder(name):
                log.dropped.append(f"{path}: {name!r} (prompt placeholder)")
                continue
            canonical, how = names.canonical(name, entity_type)
            if not names.grounded(name, canonical, texts.get(chunk_id, ""), hint):
                # A prompt example ("Tokyo") is an echo only when the text does not name it.
                why = "LightRAG prompt example" if names.is_example(name) else "not found in the text"
                log.dropped.append(f"{path}: {name!r} ({why})")
                continue
            if how:
                log.merges.append(f"{path}: {name!r} -> {canonical!r} ({how})")
            kept[name] = canonical
            description = xml_safe(str(record.get("description", "")))
            out.entities.append(EntityFragment(canonical, xml_safe(entity_type), description,
                                               [chunk_id] if chunk_id else [], path, EXTRACTED_RANK))
    for (src, tgt), records in sorted(maybe_edges.items()):
        for record in records:
            chunk_id = record.get("source_id", "")
            ends = []
            for end in (src, tgt):
                canonical = kept.get(end)
                if canonical is None:
                    canonical, _how = names.canonical(end, "")
                    if names.is_placeholder(end) or not names.grounded(end, canonical, texts.get(chunk_id, ""),
                                                                       hint):
                        break
                    # an endpoint the LLM named only in a relation still needs a node
                    out.entities.append(EntityFragment(canonical, None, "", [chunk_id] if chunk_id else [],
                                                       path, EXTRACTED_RANK))
                ends.append(canonical)
            if len(ends) != 2 or ends[0] == ends[1]:
                continue
            keywords = [xml_safe(k.strip()) for k in str(record.get("keywords", "")).split(",") if k.strip()]
            out.relations.append(RelationFragment(ends[0], ends[1], xml_safe(str(record.get("description", ""))),
                                                  keywords,
                                                  [chunk_id] if chunk_id else [], path, 1))
