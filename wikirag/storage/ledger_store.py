"""Where the ledger lives, beside the data: rows in `wikirag_index.sqlite` in the workspace folder
(storage.sqlite_store; `FileLedgerStore`, one JSON document, is what older versions wrote and is migrated from),
or rows in the index's own PostgreSQL database. Every save is atomic; the row stores also take `save_rows`,
which writes the head and only the changed notes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

import orjson

from wikirag.errors import WikiragError
from wikirag.storage.fs import LEDGER_FILENAME, atomic_write_text
from wikirag.storage.ledger_rows import RowSummary, encode_row, whole_document
from wikirag.storage.postgres import connect
from wikirag.storage.settings import StorageSettings


class LedgerStore(Protocol):
    """Where wikirag's ledger document lives. `save` replaces it whole and atomically: a reader or a crash
    sees the old or the new document, never a mix."""

    location: str  # for messages: a file path, or user@host:port/database#workspace

    def exists(self) -> bool: ...

    def load(self) -> dict | None: ...

    def head(self) -> dict | None: ...  # the document without its notes: cheap at any vault size

    def save(self, data: dict) -> None: ...

    def delete(self) -> None: ...

    # Row stores also offer: save_rows(head, rows, deletes, *, replace_all=False), load_summaries(), fetch(paths),
    # holders(names, keys) and record_counts(): see SqliteLedgerStore


class FileLedgerStore:
    """The ledger as `wikirag_ledger.json` in the workspace folder: temp file, fsync, rename."""

    def __init__(self, workspace_dir: Path) -> None:
        self.path = Path(workspace_dir) / LEDGER_FILENAME
        self.location = str(self.path)

    def exists(self) -> bool:
        return self.path.exists()

    def load(self) -> dict | None:
        if not self.path.exists():
            return None
        return json.loads(self.path.read_text(encoding="utf-8"))

    def head(self) -> dict | None:
        data = self.load()
        return None if data is None else {k: v for k, v in data.items() if k != "notes"}

    def save(self, data: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, json.dumps(data, ensure_ascii=False))

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)


_LEDGER_DDL = """
CREATE TABLE IF NOT EXISTS wikirag_ledger (
    workspace  text PRIMARY KEY,
    data       jsonb NOT NULL,
    revision   bigint NOT NULL DEFAULT 1,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS wikirag_ledger_notes (
    workspace  text NOT NULL REFERENCES wikirag_ledger (workspace) ON DELETE CASCADE,
    path       text NOT NULL,
    digest     text NOT NULL,  -- sha1 of the entry's canonical JSON: what save compares
    entry      jsonb NOT NULL,
    PRIMARY KEY (workspace, path)
);
"""


class LedgerConflict(WikiragError):
    """The ledger in the database changed since this process read it (another writer)."""


class PostgresLedgerStore:
    """The ledger in the index's own database: a head row per workspace in `wikirag_ledger` (everything
    but the notes, with a revision number) and one `wikirag_ledger_notes` row per note.

    `save` writes, in one transaction, only the notes whose digest differs from the last document this
    object loaded or saved, and bumps the revision; a revision that moved underneath (a writer that did not hold
    the lock) raises LedgerConflict and changes nothing. Either the whole new document is committed or
    none of it, like the file's rename. The document's `notes` key maps note path -> entry dict."""

    def __init__(self, settings: StorageSettings, workspace: str) -> None:
        self.settings, self.workspace = settings, workspace
        self.location = f"{settings.target}#{workspace}"
        self._known: dict[str, str] | None = None  # digest of each note last loaded or saved, by path
        self._revision: int | None = None

    def exists(self) -> bool:
        if _no_embedded_cluster(self.settings):
            return False
        with connect(self.settings) as conn:
            return _ledger_tables_exist(conn) and conn.execute(
                "SELECT 1 FROM wikirag_ledger WHERE workspace = %s", (self.workspace,)).fetchone() is not None

    def load(self) -> dict | None:
        """The document, or None when this workspace has none (reading creates no table)."""
        return whole_document(self)

    def load_summaries(self) -> tuple[dict, dict[str, RowSummary]] | None:
        """The head and every note's RowSummary (the database extracts the fields; no row is decoded
        here), or None when this workspace has no ledger."""
        if _no_embedded_cluster(self.settings):
            self._known, self._revision = {}, 0
            return None
        with connect(self.settings) as conn:
            head = None
            if _ledger_tables_exist(conn):
                head = conn.execute("SELECT data, revision FROM wikirag_ledger WHERE workspace = %s",
                                    (self.workspace,)).fetchone()
            if head is None:
                self._known, self._revision = {}, 0
                return None
            fields = (_SUMMARY_FIELDS if _summary_columns(conn) else
                      f"entry->>'signature', entry->>'status', entry->>'chunk_digest', {_CHUNKS}")
            rows = conn.execute(
                f"SELECT path, digest, {fields} FROM wikirag_ledger_notes WHERE workspace = %s "
                'ORDER BY path COLLATE "C"', (self.workspace,)).fetchall()
        self._revision = head[1]
        self._known = {path: digest for path, digest, *_ in rows}
        return dict(head[0]), {path: RowSummary(digest, signature or "", status or "indexed", chunk_digest or "",
                                                chunks or 0)
                               for path, digest, signature, status, chunk_digest, chunks in rows}

    def fetch(self, paths: list[str]) -> dict[str, dict]:
        """These notes' rows, decoded (absent paths are left out)."""
        if not paths:
            return {}
        with connect(self.settings) as conn:
            from psycopg.types.json import set_json_loads

            set_json_loads(orjson.loads, conn)
            rows = conn.execute("SELECT path, entry FROM wikirag_ledger_notes WHERE workspace = %s AND path = ANY(%s)",
                                (self.workspace, list(paths))).fetchall()
        return {path: entry for path, entry in rows}

    def holders(self, names: Any, keys: Any) -> set[str]:
        """The notes whose stored rows hold an entity fragment of one of `names` or a relation fragment of
        one of `keys` (either direction)."""
        keys = sorted(keys)
        entities = [orjson.dumps([{"name": name}]).decode() for name in sorted(names)]
        relations = [orjson.dumps([{"src": a, "tgt": b}]).decode() for a, b in keys] + \
                    [orjson.dumps([{"src": b, "tgt": a}]).decode() for a, b in keys]
        if not entities and not relations:
            return set()
        with connect(self.settings) as conn:
            rows = conn.execute(  # containment, so the GIN indexes answer (_HOLDERS_DDL)
                "SELECT path FROM wikirag_ledger_notes WHERE workspace = %s AND "
                "(entry->'entities' @> ANY(%s::jsonb[]) OR entry->'relations' @> ANY(%s::jsonb[]))",
                (self.workspace, entities, relations)).fetchall()
        return {row[0] for row in rows}

    def record_counts(self) -> tuple[int, int]:
        """Distinct entity names and relation keys over every stored row of this workspace."""
        with connect(self.settings) as conn:
            entities = conn.execute(
                "SELECT count(DISTINCT e->>'name') FROM wikirag_ledger_notes n, "
                "jsonb_array_elements(n.entry->'entities') e WHERE n.workspace = %s", (self.workspace,)).fetchone()[0]
            relations = conn.execute(
                'SELECT count(*) FROM (SELECT DISTINCT least(s COLLATE "C", t COLLATE "C"), '
                'greatest(s COLLATE "C", t COLLATE "C") FROM (SELECT r->>\'src\' AS s, r->>\'tgt\' AS t '
                "FROM wikirag_ledger_notes n, jsonb_array_elements(n.entry->'relations') r "
                "WHERE n.workspace = %s) x) y", (self.workspace,)).fetchone()[0]
        return entities, relations

    def head(self) -> dict | None:
        if _no_embedded_cluster(self.settings):
            return None
        with connect(self.settings) as conn:
            if not _ledger_tables_exist(conn):
                return None
            row = conn.execute("SELECT data FROM wikirag_ledger WHERE workspace = %s", (self.workspace,)).fetchone()
        return None if row is None else dict(row[0])

    def save(self, data: dict) -> None:
        head = {k: v for k, v in data.items() if k != "notes"}
        self._replace(head, {p: encode_row(e) for p, e in data.get("notes", {}).items()})

    def _replace(self, head: dict, encoded: dict[str, tuple[str, str]]) -> None:
        notes = encoded
        known = self._known
        with connect(self.settings) as conn:
            _ensure_ledger_tables(conn)
            with conn.transaction():
                current = self._write_head(conn, head, check=known is not None)
                if known is None:  # never loaded: rewrite every note
                    conn.execute("DELETE FROM wikirag_ledger_notes WHERE workspace = %s", (self.workspace,))
                    known = {}
                self._write_notes(conn, [p for p in known if p not in notes], encoded, known)
        self._revision = current + 1
        self._known = {p: digest for p, (digest, _) in encoded.items()}

    def save_rows(self, head: dict, upserts: dict[str, tuple[str, str]], deletes: Any = (), *,
                  replace_all: bool = False) -> None:
        """The head and only these notes (path -> (digest, text), as ledger_rows.encode_row makes them), in
        one transaction; the revision check as in `save`."""
        if replace_all:
            self._replace(head, dict(upserts))
            return
        if self._known is None:
            raise ValueError(f"{self.location}: save_rows before load or save; the changed rows alone are not a ledger")
        encoded = dict(upserts)
        gone = [p for p in deletes if p not in encoded]
        with connect(self.settings) as conn:
            _ensure_ledger_tables(conn)
            with conn.transaction():
                current = self._write_head(conn, head, check=True)
                self._write_notes(conn, gone, encoded, self._known)
        self._revision = current + 1
        for p in gone:
            self._known.pop(p, None)
        self._known.update({p: digest for p, (digest, _) in encoded.items()})

    def _write_head(self, conn: Any, head: dict, *, check: bool) -> int:
        """Lock the head row, refuse (with `check`) a revision that moved since this object read it, and
        write the head with the revision bumped. Returns the revision found."""
        from psycopg.types.json import Jsonb

        row = conn.execute("SELECT revision FROM wikirag_ledger WHERE workspace = %s FOR UPDATE",
                           (self.workspace,)).fetchone()
        current = row[0] if row else 0
        if check and current != self._revision:
            raise LedgerConflict(f"{self.location}: the ledger changed since this run read it "
                                 "(another wikirag wrote this workspace); run the command again")
        conn.execute("INSERT INTO wikirag_ledger (workspace, data, revision) VALUES (%s, %s, 1) "
                     "ON CONFLICT (workspace) DO UPDATE SET data = EXCLUDED.data, "
                     "revision = wikirag_ledger.revision + 1, updated_at = now()",
                     (self.workspace, Jsonb(head)))
        return current

    def _write_notes(self, conn: Any, gone: list[str], encoded: dict[str, tuple[str, str]],
                     known: dict[str, str]) -> None:
        """Delete the `gone` rows and upsert the encoded notes whose digest differs from `known`."""
        if gone:
            conn.execute("DELETE FROM wikirag_ledger_notes WHERE workspace = %s AND path = ANY(%s)",
                         (self.workspace, gone))
        changed = [(self.workspace, p, digest, text) for p, (digest, text) in encoded.items()
                   if known.get(p) != digest]
        if changed:
            with conn.cursor() as cur:
                cur.executemany("INSERT INTO wikirag_ledger_notes (workspace, path, digest, entry) "
                                "VALUES (%s, %s, %s, %s::jsonb) ON CONFLICT (workspace, path) "
                                "DO UPDATE SET digest = EXCLUDED.digest, entry = EXCLUDED.entry", changed)

    def delete(self) -> None:
        with connect(self.settings) as conn, conn.transaction():
            if _ledger_tables_exist(conn):
                conn.execute("DELETE FROM wikirag_ledger WHERE workspace = %s", (self.workspace,))
        self._known, self._revision = {}, 0


def _no_embedded_cluster(settings: StorageSettings) -> bool:
    """An embedded store that was never created holds no ledger: say so without creating a cluster."""
    return settings.embedded and not (Path(settings.data_dir) / "PG_VERSION").exists()


def _ledger_tables_exist(conn: Any) -> bool:
    return conn.execute("SELECT to_regclass('wikirag_ledger') IS NOT NULL "
                        "AND to_regclass('wikirag_ledger_notes') IS NOT NULL").fetchone()[0]


def _ensure_ledger_tables(conn: Any) -> None:
    """Make or bring up to date the ledger's tables, in a transaction of its own (committed here): a migration's
    exclusive locks (ALTER TABLE, ALTER INDEX) end before the ledger write that follows, which on a server
    shared by several workspaces would otherwise hold them for the whole write."""
    if not _schema_current(conn):  # (the columns and indexes are made with the tables, so they exist too)
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('wikirag:schema'))")
            conn.execute(_LEDGER_DDL)
            conn.execute(_SUMMARY_DDL)
            conn.execute(_HOLDERS_DDL)
    conn.commit()


# What `holders` asks (which rows hold an entity or relation fragment of these names), answered from GIN indexes
# on the fragment lists: without them every edit read every row's fragments (60 ms at 13,000 notes, 0.1 ms with).
# fastupdate off: by default GIN files new entries in a pending list that every scan reads in full until a
# VACUUM merges it, and an embedded server rarely lives long enough for autovacuum. A first index of 13,000
# notes left them all there: the query planner then chose a sequential scan, and a forced index scan took 12 ms.
_HOLDER_INDEXES = ("wikirag_ledger_notes_entities", "wikirag_ledger_notes_relations")
_HOLDERS_DDL = """
CREATE INDEX IF NOT EXISTS wikirag_ledger_notes_entities ON wikirag_ledger_notes
    USING gin ((entry->'entities') jsonb_path_ops) WITH (fastupdate = off);
CREATE INDEX IF NOT EXISTS wikirag_ledger_notes_relations ON wikirag_ledger_notes
    USING gin ((entry->'relations') jsonb_path_ops) WITH (fastupdate = off);
ALTER INDEX wikirag_ledger_notes_entities SET (fastupdate = off);
ALTER INDEX wikirag_ledger_notes_relations SET (fastupdate = off);
SELECT gin_clean_pending_list('wikirag_ledger_notes_entities'::regclass);
SELECT gin_clean_pending_list('wikirag_ledger_notes_relations'::regclass)
"""


def _schema_current(conn: Any) -> bool:
    """Whether the notes table has its summary columns and both holder indexes, without a pending list. Indexes
    of another role (a server shared by several) are left as they are: only their owner may alter them, and
    they answer the same with a pending list, only slower."""
    return _summary_columns(conn) and conn.execute(
        "SELECT count(*) = 2 FROM pg_class WHERE oid IN (to_regclass(%s), to_regclass(%s)) "
        "AND (reloptions @> '{fastupdate=off}' OR NOT pg_has_role(relowner, 'USAGE'))", _HOLDER_INDEXES).fetchone()[0]


# What load_summaries reads of every row, kept in columns the server fills on each write: extracting them from
# the JSONB entries made it decompress every row (80 ms of a 13,000-note run's 130 ms read).
_SUMMARY_DDL = """
ALTER TABLE wikirag_ledger_notes
    ADD COLUMN IF NOT EXISTS summary_signature text GENERATED ALWAYS AS (entry->>'signature') STORED,
    ADD COLUMN IF NOT EXISTS summary_status text GENERATED ALWAYS AS (entry->>'status') STORED,
    ADD COLUMN IF NOT EXISTS summary_chunk_digest text GENERATED ALWAYS AS (entry->>'chunk_digest') STORED,
    ADD COLUMN IF NOT EXISTS summary_chunks integer GENERATED ALWAYS AS ({chunks}) STORED
"""
_CHUNKS = "CASE WHEN jsonb_typeof(entry->'chunk_ids') = 'array' THEN jsonb_array_length(entry->'chunk_ids') END"
_SUMMARY_DDL = _SUMMARY_DDL.format(chunks=_CHUNKS)
_SUMMARY_FIELDS = "summary_signature, summary_status, summary_chunk_digest, summary_chunks"


def _summary_columns(conn: Any) -> bool:
    """Whether the notes table has the summary columns (a table made by an older wikirag gets them on its next
    write; until then reads extract the fields from the entries)."""
    return conn.execute("SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attname = 'summary_chunks' "
                        "AND attrelid = to_regclass('wikirag_ledger_notes') AND NOT attisdropped)").fetchone()[0]


def ledger_store(settings: StorageSettings, workspace_dir: Path, workspace: str) -> LedgerStore:
    """The ledger beside the data: in PostgreSQL when any storage is there, else the workspace folder.
    (With only other servers, e.g. Neo4j + Qdrant, the ledger stays a local file: one indexing machine.)"""
    if settings.uses_postgres:
        return PostgresLedgerStore(settings, workspace)
    from wikirag.storage.sqlite_store import SqliteLedgerStore

    return SqliteLedgerStore(workspace_dir)


def recorded_meta(settings: StorageSettings, workspace_dir: Path, workspace: str) -> dict[str, Any] | None:
    """What a workspace's ledger head records about the store (the embedding identity, the servers written to),
    or None when the workspace has no ledger yet. Reads the ledger's head only."""
    head = ledger_store(settings, workspace_dir, workspace).head()
    return None if head is None else head.get("meta") or {}


def unfinished_writes(settings: StorageSettings, workspace_dir: Path, workspace: str) -> int | None:
    """None when the last run finished its writes; else how many notes' chunks it promised and may not have
    written (0 when only graph records are owed). An interrupted first index leaves every note of its batch
    listed in the ledger with none of it in LightRAG yet. Reads the ledger's head only."""
    head = ledger_store(settings, workspace_dir, workspace).head()
    pending = (head or {}).get("pending") or {}
    if not any(pending.values()):
        return None
    return len(pending.get("chunk_notes") or [])


def recorded_embedding(settings: StorageSettings, workspace_dir: Path, workspace: str) -> str | None:
    """The embedding identity a workspace was built with (`provider:model:dim`; "" if its ledger does not
    say), or None when the workspace has no ledger yet. Reads the ledger's head only."""
    meta = recorded_meta(settings, workspace_dir, workspace)
    return None if meta is None else meta.get("embedding") or ""


# LightRAG's LLM cache table: paid answers, kept by `--rebuild` unless asked (index.run._wipe_workspace).
LLM_CACHE_TABLES = ("lightrag_llm_cache",)


def drop_workspace(settings: StorageSettings, workspace: str, keep: tuple[str, ...] = ()) -> int:
    """Delete every row of `workspace` from LightRAG's and wikirag's tables (for `index --rebuild`), in one
    transaction, except the tables named in `keep`; other workspaces are untouched. Covers vector tables of
    every embedding model. Returns the number of rows deleted."""
    with connect(settings) as conn, conn.transaction():
        tables = [r[0] for r in conn.execute(
            "SELECT c.table_name FROM information_schema.columns c JOIN information_schema.tables t "
            "ON t.table_schema = c.table_schema AND t.table_name = c.table_name "
            "WHERE c.table_schema = current_schema() AND c.column_name = 'workspace' "
            "AND t.table_type = 'BASE TABLE' "
            "AND (c.table_name LIKE 'lightrag\\_%%' OR c.table_name LIKE 'wikirag\\_ledger%%') "
            "ORDER BY (c.table_name = 'lightrag_graph_nodes'), (c.table_name = 'wikirag_ledger'), c.table_name"
        ).fetchall()]
        deleted = 0
        for table in (t for t in tables if t not in keep):
            cur = conn.execute(f'DELETE FROM "{table}" WHERE workspace = %s', (workspace,))
            deleted += cur.rowcount
    return deleted

