"""LightRAG's document rows (`full_docs`, `doc_status`) for the notes wikirag wrote directly.

wikirag writes chunks, entities and relations without LightRAG's document pipeline, so LightRAG's own
server (`lightrag-server`, its WebUI and documents API) would list no documents. One row per note, with the
note's vault path as file path, status `processed` and its chunk ids, makes the store a normal LightRAG
store: the server lists every note, shows the graph and answers queries. The rows are derived: each run
rewrites those of the notes whose chunks changed since the last sync and drops those of gone notes
(index.lexical keeps that record), and reconciles the whole store with the ledger when there is no record.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

# LightRAG's PostgreSQL table of documents holds the file path in VARCHAR(1024): a note deeper than that (a
# Notion export's nested pages) failed the whole run there. The row is only for LightRAG's own server, which
# lists documents from doc_status (TEXT, the whole path): this one keeps the path's end.
DOC_NAME_MAX_CHARS = 1024


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat()


async def sync_document_rows(rag: Any, notes: dict[str, tuple[str, list[str]]],
                             gone_docs: set[str] | None = None) -> int:
    """Write the doc rows of `notes` (path -> (doc id, chunk ids)) and delete the rows `gone_docs` (doc ids).
    `gone_docs=None` reconciles the whole store instead: `notes` is then every note, rows missing are
    written, rows of notes not in it are deleted. Returns how many rows were written."""
    import_guard()
    from lightrag.base import DocStatus

    by_doc = {doc_id: (path, chunks) for path, (doc_id, chunks) in notes.items() if doc_id}
    todo = sorted(by_doc)
    if gone_docs is None:
        existing = await rag.doc_status.get_docs_by_statuses(list(DocStatus))
        gone = sorted(set(existing) - set(by_doc))
    else:
        gone = sorted(gone_docs)
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
            shown = path if len(path) <= DOC_NAME_MAX_CHARS else "…" + path[-(DOC_NAME_MAX_CHARS - 1):]
            docs[doc_id] = {"content": content, "file_path": shown}
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
