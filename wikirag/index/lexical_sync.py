"""Keeping the search files in step with the store after every `index`/`watch` run (`sync_after_run`).

The files (index.lexical's BM25 index with its anchor text, index.search_rows' names and links rows) are
derived from the ledger and LightRAG's chunk store; each sync re-reads only the notes whose chunks or ledger
rows changed since the last one, so a crash can only leave them one run behind, never wrong for long.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from wikirag.index.anchors import by_target, sync_pairs
from wikirag.index.lexical import (
    LEXICAL_VERSION,
    NAMES_FILENAME,
    OLD_LINKS_FILENAME,
    LexicalIndex,
    build_index,
    index_file_current,
    load_index,
    save_index,
    tokenize,
    update_index,
)
from wikirag.index.search_rows import TABLE_ROWS_VERSION, sync_rows
from wikirag.markdown.searchable import searchable_text
from wikirag.storage.fs import atomic_write_bytes
from wikirag.vault.memory import cyclic_gc_paused


def search_files_ready(workspace_dir: Path) -> bool:
    """The index and the names head are there and of this version (an older one makes even an unchanged run
    sync)."""
    head = _read_json(workspace_dir / NAMES_FILENAME)
    if not (isinstance(head, dict) and head.get("rows") == TABLE_ROWS_VERSION):
        return False
    return index_file_current(workspace_dir)


def _read_json(path: Path) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


def _heading_text(heading: Any) -> str:
    if isinstance(heading, dict):
        parts = [*heading.get("parent_headings", []), heading.get("heading", "")]
        return " > ".join(str(p) for p in parts if p)
    return str(heading or "")


def _note_key(notes: Any, path: str) -> str:
    """What the index records of a note's chunks: their digest (ids, order, headings, path), read without
    decoding the note's ledger row; the chunk ids for an entry from before chunk digests."""
    row = notes.summary(path)
    return row.chunk_digest or " ".join(notes[path].chunk_ids)


async def _fetch_chunks(rag: Any, ids: list[str]) -> dict[str, tuple[str, list[str]]]:
    """Heading text and search tokens of chunks, read from LightRAG's chunk store (any backend)."""
    out: dict[str, tuple[str, list[str]]] = {}
    for start in range(0, len(ids), 1000):
        batch = ids[start:start + 1000]
        for cid, record in zip(batch, await rag.text_chunks.get_by_ids(batch), strict=True):
            if record:
                heading = _heading_text(record.get("heading"))
                text = searchable_text(str(record.get("content", "")))  # no comments, math, URLs, HTML tags
                out[cid] = (heading, tokenize(f"{heading}\n{text}"))
    return out


async def sync_search_files(rag: Any, ledger: Any, workspace_dir: Path, last_run: dict[str, Any] | None = None,
                            old: LexicalIndex | None = None, dirty: set[str] | None = None,
                            keys: dict[str, str] | None = None) -> tuple[int, int]:
    """Bring the lexical index and the names and links rows in step with the ledger's chunks.

    The index records each note's chunk digest as of its last sync: notes whose digest differs (`dirty`, or
    all without an `old` index) have their chunks read from LightRAG's store and tokenized again; the others
    keep their tokens, and the weights are recomputed from the arrays (index.bm25). A note with a chunk
    missing from the store is recorded unsynced, so the next run tries again. The anchor text follows the
    ledger's link relations the same way, by ledger row digest (index.anchors; `old` loaded with its pairs).
    `keys`: the ledger's `note_keys` when the caller has them. Returns the store's record counts
    (index.search_rows.sync_rows).
    """
    notes = ledger.notes
    keys = dict(keys) if keys is not None else note_keys(ledger)  # a copy: unsynced notes are blanked below
    if old is None or dirty is None:
        old = build_index([])
        dirty = set(keys)
    position = {cid: i for i, cid in enumerate(old.chunk_ids)}
    kept: dict[str, list[str]] = {}  # a note not dirty has the chunks the index holds for it
    for cid, path in zip(old.chunk_ids, old.chunk_paths, strict=True):
        kept.setdefault(path, []).append(cid)
    notes.load(dirty)
    wanted = [(cid, path) for path in sorted(keys)
              for cid in (notes[path].chunk_ids if path in dirty else kept.get(path, []))]
    fetched = await _fetch_chunks(rag, [cid for cid, path in wanted if path in dirty or cid not in position])
    rows: list[tuple[str, str, str]] = []
    added: list[list[str]] = []
    layout: list[int] = []
    for cid, path in wanted:
        if path not in dirty and cid in position:
            i = position[cid]
            layout.append(i)
            rows.append((cid, path, old.headings[i]))
        elif cid in fetched:
            heading, tokens = fetched[cid]
            layout.append(-1 - len(added))
            added.append(tokens)
            rows.append((cid, path, heading))
        else:
            keys[path] = ""
    index = update_index(old, rows, added, layout, keys)
    index.anchor_pairs, changed = sync_pairs(ledger, old.anchor_pairs)
    index.anchors = by_target(index.anchor_pairs) if changed or old.anchors is None else old.anchors
    save_index(index, workspace_dir)
    counts = sync_rows(ledger, workspace_dir)
    # after the rows' commit: a warm engine that sees this file change reads rows at least this new
    head = {"version": LEXICAL_VERSION, "last_run": last_run or {}, "rows": TABLE_ROWS_VERSION}
    atomic_write_bytes(workspace_dir / NAMES_FILENAME, orjson.dumps(head))
    (workspace_dir / OLD_LINKS_FILENAME).unlink(missing_ok=True)  # the links rows' file before search_rows
    return counts


def note_keys(ledger: Any) -> dict[str, str]:
    """Per note what the index records of its chunks (`_note_key`)."""
    notes = ledger.notes
    return {p: _note_key(notes, p) for p in notes}


def dirty_notes(old: LexicalIndex | None, ledger: Any, keys: dict[str, str] | None = None) -> set[str] | None:
    """The notes whose chunks differ from what `old` recorded (gone notes included); None without an index.
    `keys`: the ledger's `note_keys` when the caller has them."""
    if old is None:
        return None
    keys = keys if keys is not None else note_keys(ledger)
    dirty = {p for p, key in keys.items() if old.note_keys.get(p) != key}
    return dirty | {p for p in old.note_keys if p not in keys}


async def sync_after_run(rag: Any, ledger: Any, workspace_dir: Path, summary: dict[str, Any]) -> tuple[int, int]:
    """The hook `index_vault` calls once the store is flushed: LightRAG's document rows, then the search files.
    Both follow the notes whose chunks differ from what the lexical index recorded at the last sync (so a run
    that died before this point is caught up by the next), or every note when there is no index yet."""
    from wikirag.graph.records import doc_id_for
    from wikirag.lightrag.documents import sync_document_rows

    old = load_index(workspace_dir, pairs=True)
    keys = note_keys(ledger)  # read once for both steps: a document-rows sync changes no ledger row
    dirty = dirty_notes(old, ledger, keys)
    paths = sorted(ledger.notes if dirty is None else (p for p in dirty if p in ledger.notes))
    ledger.notes.load(paths)
    notes = {p: (ledger.notes[p].doc_id, list(ledger.notes[p].chunk_ids)) for p in paths}
    gone = None if dirty is None else {doc_id_for(p) for p in dirty if p not in ledger.notes}
    await sync_document_rows(rag, notes, gone)
    with cyclic_gc_paused():  # the names and links tables: a dict per note, no cycles
        return await sync_search_files(rag, ledger, workspace_dir, summary, old, dirty, keys)
