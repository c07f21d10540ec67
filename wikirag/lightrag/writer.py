"""Writing merged records into LightRAG's own storages: the graph, the three vector stores, the chunk KV
store, and the entity/relation chunk trackers LightRAG's merges read.

Why not `LightRAG.ainsert_custom_kg`? In 1.5.x it overwrites an existing entity instead of merging, keeps
one source chunk per entity, writes no recovery anchors, and flushes every store after each call.
"""

from __future__ import annotations

from collections.abc import Container
from typing import TYPE_CHECKING, Any

from wikirag.lightrag.answers import flush_answers
from wikirag.lightrag.guard import import_lightrag
from wikirag.lightrag.ids import SEP, md5_id

if TYPE_CHECKING:  # record types only: the writer takes what graph/ builds, it does not import graph/
    from wikirag.graph.records import ChunkRecord


class StoreWriter:
    """Applies chunk, entity and relation changes to an open LightRAG instance's storages."""

    def __init__(self, rag: Any) -> None:
        self.rag = rag

    async def upsert_chunks(self, path: str, doc_id: str, chunks: list[ChunkRecord]) -> None:
        if not chunks:
            return
        records = {}
        for c in chunks:
            record = {
                "content": c.content,
                "tokens": c.tokens,
                "chunk_order_index": c.order,
                "full_doc_id": doc_id,
                "file_path": path,
            }
            if c.heading:
                record["heading"] = c.heading
            records[c.id] = record
        await self.rag.text_chunks.upsert(records)
        await self.rag.chunks_vdb.upsert(records)

    async def delete_chunks(self, chunk_ids: list[str]) -> None:
        if chunk_ids:
            await self.rag.text_chunks.delete(chunk_ids)
            await self.rag.chunks_vdb.delete(chunk_ids)

    async def upsert_entities(self, records: list[dict[str, Any]], *, defer_vectors: Container[str] = ()) -> None:
        """Graph nodes, trackers and vectors; the vectors of the names in `defer_vectors` are left for a later
        `upsert_entity_vectors` (the vector store embeds on upsert: a record a later batch of the run changes
        again is embedded once, with its final text)."""
        if not records:
            return
        import time

        now = int(time.time())
        graph = self.rag.chunk_entity_relation_graph
        await graph.upsert_nodes_batch([(r["entity_id"], {**r, "created_at": now}) for r in records])
        await self._entity_vectors([r for r in records if r["entity_id"] not in defer_vectors])
        trackers = {
            r["entity_id"]: {"chunk_ids": ids, "count": len(ids)}
            for r in records
            if (ids := [c for c in r["source_id"].split(SEP) if c])
        }
        if self.rag.entity_chunks is not None:
            if trackers:
                await self.rag.entity_chunks.upsert(trackers)
            # An entity left with no chunk (its last linking note went) must not keep the old tracker.
            if chunkless := [r["entity_id"] for r in records if r["entity_id"] not in trackers]:
                await self.rag.entity_chunks.delete(chunkless)

    async def upsert_entity_vectors(self, records: list[dict[str, Any]]) -> None:
        """The entities' rows in the vector store alone (their text embedded here)."""
        await self._entity_vectors(records)

    async def _entity_vectors(self, records: list[dict[str, Any]]) -> None:
        if records:
            await self.rag.entities_vdb.upsert({
                md5_id(r["entity_id"], "ent-"): {
                    "entity_name": r["entity_id"],
                    "entity_type": r["entity_type"],
                    "content": f"{r['entity_id']}\n{r['description']}",
                    "source_id": r["source_id"],
                    "description": r["description"],
                    "file_path": r["file_path"],
                }
                for r in records
            })

    async def delete_entities(self, names: list[str]) -> None:
        if not names:
            return
        await self.rag.chunk_entity_relation_graph.remove_nodes(names)
        await self.rag.entities_vdb.delete([md5_id(n, "ent-") for n in names])
        if self.rag.entity_chunks is not None:
            await self.rag.entity_chunks.delete(names)

    async def upsert_relations(self, records: list[dict[str, Any]], *,
                               defer_vectors: Container[tuple[str, str]] = ()) -> None:
        """Graph edges, trackers and vectors; as `upsert_entities`, the keys (src_id, tgt_id) in `defer_vectors`
        get their vectors from a later `upsert_relation_vectors`."""
        if not records:
            return
        import time

        import_lightrag()
        from lightrag.utils import make_relation_chunk_key

        now = int(time.time())
        fields = ("weight", "description", "keywords", "source_id", "file_path")
        await self.rag.chunk_entity_relation_graph.upsert_edges_batch([
            (r["src_id"], r["tgt_id"], {**{k: r[k] for k in fields}, "created_at": now}) for r in records
        ])
        await self._relation_vectors([r for r in records if (r["src_id"], r["tgt_id"]) not in defer_vectors])
        trackers = {
            make_relation_chunk_key(r["src_id"], r["tgt_id"]): {"chunk_ids": ids, "count": len(ids)}
            for r in records
            if (ids := [c for c in r["source_id"].split(SEP) if c])
        }
        if self.rag.relation_chunks is not None:
            if trackers:
                await self.rag.relation_chunks.upsert(trackers)
            keys = [make_relation_chunk_key(r["src_id"], r["tgt_id"]) for r in records]
            if chunkless := [k for k in keys if k not in trackers]:
                await self.rag.relation_chunks.delete(chunkless)

    async def upsert_relation_vectors(self, records: list[dict[str, Any]]) -> None:
        """The relations' rows in the vector store alone (their text embedded here)."""
        await self._relation_vectors(records)

    async def _relation_vectors(self, records: list[dict[str, Any]]) -> None:
        if records:
            await self.rag.relationships_vdb.upsert({
                md5_id(r["src_id"] + r["tgt_id"], "rel-"): {
                    "src_id": r["src_id"],
                    "tgt_id": r["tgt_id"],
                    "source_id": r["source_id"],
                    "content": f"{r['keywords']}\t{r['src_id']}\n{r['tgt_id']}\n{r['description']}",
                    "keywords": r["keywords"],
                    "description": r["description"],
                    "weight": r["weight"],
                    "file_path": r["file_path"],
                }
                for r in records
            })

    async def delete_relations(self, keys: list[tuple[str, str]]) -> None:
        if not keys:
            return
        import_lightrag()
        from lightrag.utils import make_relation_chunk_key, make_relation_vdb_ids

        await self.rag.chunk_entity_relation_graph.remove_edges(keys)
        await self.rag.relationships_vdb.delete([i for a, b in keys for i in make_relation_vdb_ids(a, b)])
        if self.rag.relation_chunks is not None:
            await self.rag.relation_chunks.delete([make_relation_chunk_key(a, b) for a, b in keys])

    async def flush(self) -> None:
        """Persist every storage (LightRAG's file stores write whole files here; embeddings run here)."""
        rag = self.rag
        for storage in (rag.text_chunks, rag.chunks_vdb, rag.entities_vdb, rag.relationships_vdb,
                        rag.entity_chunks, rag.relation_chunks, rag.chunk_entity_relation_graph):
            if storage is not None:
                await storage.index_done_callback()
        await flush_answers(rag)  # the LLM cache too: answers paid for in this batch are on disk now

