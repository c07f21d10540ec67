"""The names and links rows queries read, one row per note in the workspace's SQLite database.

Per note: its names row (title, aliases, entity names, tags, status: what keyword matching, note resolution
and `status` need without the ledger) and its links row (its relations, each marked "link" or "llm": what
`neighbors` and the citations' origins read). Both are derived from the note's ledger entry and record the
ledger row digest they came from, so a run derives and writes only the rows of notes whose ledger row
changed. Two refcount tables (how many notes hold each entity name and each relation key) give the store's
record counts without reading every row.

Why rows and not JSON files: at 13,000 notes the two files were 17 MB, read and written whole after every
edit (≈0.13 s of a one-note run); a row write is a few milliseconds. A small head file, `wikirag_names.json`
(version, last run), is still written after each sync: its mtime tells a warm engine to re-read the rows.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import orjson

from wikirag.storage.sqlite_store import connect_index_db, get_doc, index_db_transaction, put_doc

TABLE_ROWS_VERSION = 3  # bump when names_row or links_row change: saved rows are then derived again
# 2: rows in SQLite (search_notes) with refcounted entity names and relation keys; 3: names rows count links
_HEAD_DOC = "search_rows"

_NAMES_ROW_KEYS = frozenset({"title", "entity", "aliases", "entities", "entity_record", "tags", "status", "doc_id",
                             "chunks", "links"})


def names_row(entry: Any) -> dict[str, Any]:
    """What queries need to name a note: title, aliases, entity names, tags, status, doc id, and how many
    distinct names its own links reach (what marks a navigation note, query.ranking.navigation_notes)."""
    names = {f.name for f in entry.entities}
    own = _from_own_links(entry)
    targets = {f.tgt for f in entry.relations if own(f)}
    return {"title": entry.title, "entity": entry.entity, "aliases": list(entry.aliases),
            "entities": sorted(names - {entry.entity}), "entity_record": entry.entity in names,
            "tags": list(entry.tags), "status": entry.status, "doc_id": entry.doc_id,
            "chunks": len(entry.chunk_ids), "links": len(targets)}


def links_row(entry: Any) -> list[list[str]]:
    """A note's relations as [source, target, description, origin]; origin is "link" for a relation its own
    wikilinks/frontmatter gave (the note's entity to a name it links), "llm" for one LightRAG extracted."""
    own = _from_own_links(entry)
    return [[f.src, f.tgt, f.description[:300], "link" if own(f) else "llm"] for f in entry.relations]


def _from_own_links(entry: Any) -> Callable[[Any], bool]:
    """Whether a relation fragment is one the note's own wikilinks/frontmatter gave: from the note's entity to a
    name it links (an entity fragment of rank 1). The others LightRAG extracted."""
    linked = {f.name for f in entry.entities if f.rank == 1}
    return lambda f: f.src == entry.entity and f.tgt in linked


def names_table(ledger: Any) -> dict[str, dict[str, Any]]:
    """Per note its names_row (every note of the ledger)."""
    return {path: names_row(entry) for path, entry in sorted(ledger.notes.items())}


def links_table(ledger: Any) -> dict[str, list[list[str]]]:
    """Per note its links_row (every note of the ledger)."""
    return {path: links_row(entry) for path, entry in sorted(ledger.notes.items())}


def _held(names: Any, links: Any) -> tuple[set[str], set[str]] | None:
    """The entity names and relation keys ("src\\x1ftgt", ends sorted) a note's rows put in the store; None for
    rows of another shape (a damaged or foreign row: the tables are then derived again whole)."""
    if not (isinstance(names, dict) and set(names) >= _NAMES_ROW_KEYS and isinstance(links, list)
            and isinstance(names["entities"], list) and all(isinstance(n, str) for n in names["entities"])
            and isinstance(names["entity"], str)
            and all(isinstance(r, list) and len(r) == 4 and all(isinstance(x, str) for x in r) for r in links)):
        return None
    entities = {names["entity"]} if names["entity_record"] else set()
    entities.update(names["entities"])
    keys = {f"{s}\x1f{t}" if s <= t else f"{t}\x1f{s}" for s, t, *_ in links}
    return entities, keys


class _Damaged(Exception):
    """A saved row that cannot be counted out of the refcounts: derive every row again."""


def sync_rows(ledger: Any, workspace_dir: Path) -> tuple[int, int]:
    """Bring the rows in step with the ledger and return the store's record counts (distinct entity names,
    distinct relation keys). A note keeps its saved rows while its ledger row has the digest they were derived
    from; only the others are read from the ledger (decoded) and derived again, and only their rows and
    refcounts are written. Rows of another version, or a saved row of the wrong shape, derive everything."""
    try:
        return _sync(ledger, workspace_dir, whole=False)
    except _Damaged:
        return _sync(ledger, workspace_dir, whole=True)


def _sync(ledger: Any, workspace_dir: Path, *, whole: bool) -> tuple[int, int]:
    notes = ledger.notes
    digests = {p: d for p, d in notes.digests.items() if p not in notes.dirty and d}
    with index_db_transaction(workspace_dir) as conn:
        if whole or get_doc(conn, _HEAD_DOC) != {"rows": TABLE_ROWS_VERSION}:
            conn.execute("DELETE FROM search_notes")
            conn.execute("DELETE FROM search_entities")
            conn.execute("DELETE FROM search_relations")
            saved: dict[str, str] = {}
        else:
            saved = dict(conn.execute("SELECT path, digest FROM search_notes"))
        stale = sorted(p for p in notes if not digests.get(p) or saved.get(p) != digests[p])
        gone = sorted(p for p in saved if p not in notes)
        entity_delta: Counter[str] = Counter()
        key_delta: Counter[str] = Counter()
        for names, links in _saved_rows(conn, [p for p in stale if p in saved] + gone):
            held = _held(names, links)
            if held is None:
                raise _Damaged
            entity_delta.subtract(held[0])
            key_delta.subtract(held[1])
        notes.load(stale)
        fresh = []
        for path in stale:
            names, links = names_row(notes[path]), links_row(notes[path])
            held = _held(names, links)
            assert held is not None  # a derived row always has the shape
            entity_delta.update(held[0])
            key_delta.update(held[1])
            fresh.append((path, digests.get(path, ""), orjson.dumps(names).decode(), orjson.dumps(links).decode()))
        conn.executemany("DELETE FROM search_notes WHERE path = ?", [(p,) for p in gone])
        conn.executemany("INSERT OR REPLACE INTO search_notes (path, digest, names, links) VALUES (?, ?, ?, ?)",
                         fresh)
        _apply(conn, "search_entities", "name", entity_delta)
        _apply(conn, "search_relations", "key", key_delta)
        put_doc(conn, _HEAD_DOC, {"rows": TABLE_ROWS_VERSION})
        entities = conn.execute("SELECT COUNT(*) FROM search_entities").fetchone()[0]
        relations = conn.execute("SELECT COUNT(*) FROM search_relations").fetchone()[0]
    return entities, relations


def _saved_rows(conn: sqlite3.Connection, paths: list[str]) -> Iterable[tuple[Any, Any]]:
    for start in range(0, len(paths), 500):
        batch = paths[start:start + 500]
        marks = ",".join("?" * len(batch))
        for names, links in conn.execute(f"SELECT names, links FROM search_notes WHERE path IN ({marks})", batch):
            try:
                yield orjson.loads(names), orjson.loads(links)
            except orjson.JSONDecodeError:
                raise _Damaged from None


def _apply(conn: sqlite3.Connection, table: str, column: str, delta: Counter[str]) -> None:
    """Add each name's change to its count of notes; a name no note holds any more leaves the table."""
    changes = [(name, n) for name, n in delta.items() if n]
    conn.executemany(f"INSERT INTO {table} ({column}, notes) VALUES (?, ?) "
                     f"ON CONFLICT({column}) DO UPDATE SET notes = notes + excluded.notes", changes)
    conn.executemany(f"DELETE FROM {table} WHERE {column} = ? AND notes <= 0", [(name,) for name, _ in changes])


def read_rows(workspace_dir: Path, column: str) -> dict[str, Any] | None:
    """Every note's saved `names` or `links` row by path (in path order), or None when the rows are missing or
    of another version (the caller falls back to the ledger). A row that does not decode, or is not a row, is
    left out."""
    assert column in ("names", "links")
    try:
        conn = connect_index_db(workspace_dir, create=False)
        if conn is None:
            return None
        try:
            if get_doc(conn, _HEAD_DOC) != {"rows": TABLE_ROWS_VERSION}:
                return None
            rows = conn.execute(f"SELECT path, {column} FROM search_notes ORDER BY path").fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return None
    shape = dict if column == "names" else list
    out: dict[str, Any] = {}
    for path, text in rows:
        try:
            row = orjson.loads(text)
        except orjson.JSONDecodeError:
            continue
        if isinstance(row, shape):
            out[path] = row
    return out
