"""The chunks an LLM answer reads in LightRAG's naive and mix modes, in an order the caller chooses.

In those modes LightRAG puts the chunks its vector search finds into the answer's context: one call,
`chunks_vdb.query`, in operate._get_vector_context. With the local English model, a question written in
Chinese finds almost nothing there (oldwinter-cards: recall@5 0.00 in LightRAG's own order), while BM25 finds
its note in 26 questions of 26. `reorder_chunks(rag)` wraps that call on one engine's chunk store: inside
`chunk_order(choose)`, the vector hits' ids go through `choose`, which returns the ids to use, best first, and
chunks it adds are read from LightRAG's chunk store. Everything after (token budget, prompt, references) is
LightRAG's own. Outside `chunk_order`, and for every other caller of the store, the call is unchanged. The
order lives in a ContextVar, so concurrent questions on one warm engine each get their own.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

ChooseChunks = Callable[[list[str], int], list[str]]  # (vector hit ids best first, top_k) -> chunk ids to use

_CHOOSE: ContextVar[ChooseChunks | None] = ContextVar("wikirag_chunk_order", default=None)
_WRAPPED = "wikirag_reordered"


@contextlib.contextmanager
def chunk_order(choose: ChooseChunks) -> Iterator[None]:
    """Within the block, this task's vector chunk searches return `choose`'s ids (see the module doc)."""
    token = _CHOOSE.set(choose)
    try:
        yield
    finally:
        _CHOOSE.reset(token)


def reorder_chunks(rag: Any) -> None:
    """Wrap `rag.chunks_vdb.query` once so that `chunk_order` applies to it (idempotent)."""
    store = rag.chunks_vdb
    if getattr(store, _WRAPPED, False):
        return
    original = store.query
    text_chunks = rag.text_chunks

    async def query(query: str, top_k: int, query_embedding: Any = None, **kwargs: Any) -> list[dict[str, Any]]:
        hits = await original(query, top_k=top_k, query_embedding=query_embedding, **kwargs)
        choose = _CHOOSE.get()
        if choose is None:
            return hits
        by_id = {hit["id"]: hit for hit in hits if hit.get("id")}
        wanted = list(dict.fromkeys(choose(list(by_id), top_k)))[:top_k]
        missing = [cid for cid in wanted if cid not in by_id]
        for cid, record in zip(missing, await text_chunks.get_by_ids(missing) if missing else [], strict=True):
            if record and record.get("content"):
                by_id[cid] = {"id": cid, "content": record["content"], "file_path": record.get("file_path"),
                              "created_at": record.get("create_time")}
        return [by_id[cid] for cid in wanted if cid in by_id]

    store.query = query  # an instance attribute: only this engine's store
    setattr(store, _WRAPPED, True)
