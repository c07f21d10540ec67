"""The chunks and entities an LLM answer reads in LightRAG's modes, in an order the caller chooses.

Two of the vector searches LightRAG builds an answer's context from are wrapped: `chunks_vdb.query` (naive and mix, in
operate._get_vector_context) and `entities_vdb.query` (local, hybrid and mix, in operate._get_node_data, whose
entities bring their chunks). With the local English model, a question written in Chinese finds almost nothing
in either (oldwinter-cards: the expected note in 1 context of 26), while BM25 finds it in 26 of 26.
`reorder_context(rag)` wraps both searches on one engine: inside `context_order(order)`, the hits' ids (chunk
ids, entity names) go through `order.chunks` / `order.entities`, which return the ids to use, best first;
chunks they add are read from LightRAG's chunk store, entities from its graph (one it does not hold is left
out). Everything after (token budgets, related chunks, prompt, references) is LightRAG's own. Outside
`context_order`, and for every other caller of the stores, the searches are unchanged. The order lives in a
ContextVar, so concurrent questions on one warm engine each get their own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

ChooseIds = Callable[[list[str], int], list[str]]  # (the search's hits best first, top_k) -> the ids to use


@dataclass(frozen=True)
class ContextOrder:
    chunks: ChooseIds | None = None  # over chunk ids
    entities: ChooseIds | None = None  # over entity names


_ORDER: ContextVar[ContextOrder | None] = ContextVar("wikirag_context_order", default=None)
_WRAPPED = "wikirag_reordered"


@contextlib.contextmanager
def context_order(order: ContextOrder) -> Iterator[None]:
    """Within the block, this task's chunk and entity searches return `order`'s choice (see the module doc)."""
    token = _ORDER.set(order)
    try:
        yield
    finally:
        _ORDER.reset(token)


def reorder_context(rag: Any) -> None:
    """Wrap the engine's chunk and entity searches once so that `context_order` applies to them (idempotent)."""
    _wrap(rag.chunks_vdb, lambda order: order.chunks, "id", _chunk_records(rag.text_chunks))
    graph = rag.chunk_entity_relation_graph
    _wrap(rag.entities_vdb, lambda order: order.entities, "entity_name", _entity_records(graph))


def _wrap(store: Any, pick: Callable[[ContextOrder], ChooseIds | None], key: str,
          records: Callable[[list[str]], Any]) -> None:
    if getattr(store, _WRAPPED, False):
        return
    original = store.query

    async def query(query: str, top_k: int, query_embedding: Any = None, **kwargs: Any) -> list[dict[str, Any]]:
        hits = await original(query, top_k=top_k, query_embedding=query_embedding, **kwargs)
        order = _ORDER.get()
        choose = pick(order) if order is not None else None
        if choose is None or not all(hit.get(key) for hit in hits):
            return hits  # (a backend whose hits lack the id: LightRAG's own, rather than drop any)
        by_id = {hit[key]: hit for hit in hits}
        wanted = list(dict.fromkeys(choose(list(by_id), top_k)))[:top_k]
        missing = [i for i in wanted if i not in by_id]
        if missing:
            by_id.update(await records(missing))
        return [by_id[i] for i in wanted if i in by_id]

    store.query = query  # an instance attribute: only this engine's store
    setattr(store, _WRAPPED, True)


def _chunk_records(text_chunks: Any) -> Callable[[list[str]], Any]:
    async def read(ids: list[str]) -> dict[str, dict[str, Any]]:
        found = {}
        for cid, record in zip(ids, await text_chunks.get_by_ids(ids), strict=True):
            if record and record.get("content"):
                found[cid] = {"id": cid, "content": record["content"], "file_path": record.get("file_path"),
                              "created_at": record.get("create_time")}
        return found

    return read


def _entity_records(graph: Any) -> Callable[[list[str]], Any]:
    async def read(names: list[str]) -> dict[str, dict[str, Any]]:
        nodes = await graph.get_nodes_batch(names)
        return {name: {"entity_name": name, "created_at": nodes[name].get("created_at")}
                for name in names if nodes.get(name) is not None}

    return read
