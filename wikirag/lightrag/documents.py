"""LightRAG's document rows (`full_docs`, `doc_status`) for the notes wikirag wrote directly.

wikirag writes chunks, entities and relations without LightRAG's document pipeline, so LightRAG's own
server (`lightrag-server`, its WebUI and documents API) would list no documents. One row per note, with the
note's vault path as file path, status `processed` and its chunk ids, makes the store a normal LightRAG
store: the server lists every note, shows the graph and answers queries. The rows are derived: each run
reconciles them with the ledger (missing rows written, changed notes rewritten, rows of gone notes dropped).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

# Keys per filter_keys call: LightRAG 1.5.7's PostgreSQL version tests each key against a list of the keys
# found (2 s for 13,000 keys in one call; 0.1 s in batches of 500).
_FILTER_BATCH = 500


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat()


async def sync_document_rows(rag: Any, notes: dict[str, tuple[str, list[str]]], changed: set[str]) -> int:
    """Make doc rows match `notes` (path -> (doc id, chunk ids)); `changed` paths are rewritten even when
    a row exists. Returns how many rows were written."""
    import_guard()
    from lightrag.base import DocStatus

    by_doc = {doc_id: (path, chunks) for path, (doc_id, chunks) in notes.items() if doc_id}
    missing: set[str] = set()
    keys = sorted(by_doc)
    for start in range(0, len(keys), _FILTER_BATCH):  # PGDocStatusStorage.filter_keys is quadratic in its input
        missing |= await rag.doc_status.filter_keys(set(keys[start:start + _FILTER_BATCH]))
    todo = sorted(missing | {notes[p][0] for p in changed if p in notes and notes[p][0]})
    # Rows of gone notes: only when there are more rows than notes present (a count, not 13,000 rows read).
    rows = sum((await rag.doc_status.get_status_counts()).values())
    gone: list[str] = []
    if rows != len(by_doc) - len(missing):
        existing = await rag.doc_status.get_docs_by_statuses(list(DocStatus))
        gone = sorted(set(existing) - set(by_doc))
    if gone:
        await rag.doc_status.delete(gone)
        await rag.full_docs.delete(gone)
    written = 0
    for start in range(0, len(todo), 500):
        batch = todo[start:start + 500]
        docs, rows = {}, {}
        for doc_id in batch:
            path, chunk_ids = by_doc[doc_id]
            records = await rag.text_chunks.get_by_ids(chunk_ids) if chunk_ids else []
            content = "\n\n".join(r.get("content", "") for r in records if r)
            stamp = _now()
            docs[doc_id] = {"content": content, "file_path": path}
            rows[doc_id] = {"status": DocStatus.PROCESSED.value, "content_summary": content[:100],
                            "content_length": len(content), "chunks_count": len(chunk_ids),
                            "chunks_list": list(chunk_ids), "file_path": path, "created_at": stamp,
                            "updated_at": stamp, "track_id": "wikirag"}
        await rag.full_docs.upsert(docs)
        await rag.doc_status.upsert(rows)
        written += len(batch)
    if gone or written:
        await rag.full_docs.index_done_callback()
        await rag.doc_status.index_done_callback()
    return written


def import_guard() -> None:
    from wikirag.lightrag.guard import import_lightrag

    import_lightrag()
