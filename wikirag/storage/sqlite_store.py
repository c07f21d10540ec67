"""wikirag's own state in one SQLite file in the workspace folder (`wikirag_index.sqlite`, WAL): the ledger as
one row per note, the parse cache, planning's derived data (index.derived) and the names and links rows queries
read (index.search_rows) as one row per note, and small documents (ledger head, manifest).

Why SQLite (stdlib `sqlite3`): a change of one note writes that note's rows in one transaction instead of
rewriting a 13 MB JSON document, and a commit is atomic and durable (WAL, synchronous=FULL) the way the old
temp-file-and-rename was: a reader or a kill -9 sees the old or the new state, never a mix.
An older workspace's `wikirag_ledger.json` is moved into the database on first open (then deleted).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from wikirag.storage.fs import INDEX_DB_FILENAME, LEDGER_FILENAME
from wikirag.storage.ledger_rows import RowSummary, encode_row, relation_key_text, whole_document

_SCHEMA = """
CREATE TABLE IF NOT EXISTS docs (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ledger_notes (path TEXT PRIMARY KEY, entry TEXT NOT NULL, digest TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS parsed_notes (path TEXT PRIMARY KEY, digest TEXT NOT NULL, note TEXT NOT NULL,
                                         tokens INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS parsed_figures (path TEXT PRIMARY KEY, digest TEXT NOT NULL, body INTEGER NOT NULL,
                                           prose INTEGER NOT NULL, covered INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS derived_notes (path TEXT PRIMARY KEY, digest TEXT NOT NULL, links TEXT NOT NULL,
                                          unresolved TEXT NOT NULL, decision TEXT NOT NULL, signature TEXT NOT NULL,
                                          checksum TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS parsed_stats (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
                                         written_ns INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS search_notes (path TEXT PRIMARY KEY, digest TEXT NOT NULL, names TEXT NOT NULL,
                                         links TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS search_entities (name TEXT PRIMARY KEY, notes INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS search_relations (key TEXT PRIMARY KEY, notes INTEGER NOT NULL) WITHOUT ROWID;
"""


def connect_index_db(workspace_dir: Path, *, create: bool = True) -> sqlite3.Connection | None:
    """The workspace's database (WAL, durable commits); None when it does not exist and `create` is False."""
    path = Path(workspace_dir) / INDEX_DB_FILENAME
    if not create and not path.exists():
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA journal_size_limit=16777216")  # a first index's big transactions: shrink the WAL after
    conn.executescript(_SCHEMA)
    _add_digest_column(conn)
    _renew_derived_table(conn)
    return conn


@contextmanager
def index_db_transaction(workspace_dir: Path) -> Iterator[sqlite3.Connection]:
    """One write transaction on the workspace's database, which is created if missing and closed after: committed
    when the block ends, rolled back (closed uncommitted) when it raises."""
    conn = connect_index_db(workspace_dir)
    assert conn is not None  # create=True
    try:
        conn.execute("BEGIN IMMEDIATE")
        yield conn
        conn.execute("COMMIT")
    finally:
        conn.close()


def _add_digest_column(conn: sqlite3.Connection) -> None:
    """Ledgers written before rows carried their digest: add the column and fill it, once."""
    if any(row[1] == "digest" for row in conn.execute("PRAGMA table_info(ledger_notes)")):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if not any(row[1] == "digest" for row in conn.execute("PRAGMA table_info(ledger_notes)")):
            conn.execute("ALTER TABLE ledger_notes ADD COLUMN digest TEXT NOT NULL DEFAULT ''")
            rows = conn.execute("SELECT path, entry FROM ledger_notes").fetchall()
            conn.executemany("UPDATE ledger_notes SET digest = ? WHERE path = ?",
                             [(hashlib.sha1(text.encode("utf-8")).hexdigest(), path) for path, text in rows])
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _renew_derived_table(conn: sqlite3.Connection) -> None:
    """`derived_notes` from before its `unresolved` column: drop it (its rows are only a shortcut, which the
    next run derives and writes again) and create it as the schema has it now."""
    if any(row[1] == "unresolved" for row in conn.execute("PRAGMA table_info(derived_notes)")):
        return
    conn.execute("DROP TABLE IF EXISTS derived_notes")
    conn.executescript(_SCHEMA)


def get_doc(conn: sqlite3.Connection, name: str, *, fast: bool = False) -> Any:
    """A document; `fast`: one `put_doc(..., fast=True)` wrote (orjson)."""
    row = conn.execute("SELECT value FROM docs WHERE name = ?", (name,)).fetchone()
    if not row:
        return None
    if fast:
        try:
            return orjson.loads(row[0])
        except orjson.JSONDecodeError:
            pass
    return json.loads(row[0])


def put_doc(conn: sqlite3.Connection, name: str, value: Any, *, fast: bool = False) -> None:
    """Store a document as JSON. `fast` (orjson) only for documents of strings and integers below 2**63, such as
    the manifest (18,000 files' stat data at 13,000 notes): orjson writes NaN as null and reads integers beyond
    64 bits as floats, without an error."""
    text = None
    if fast:
        try:
            text = orjson.dumps(value).decode()
        except TypeError:  # a lone surrogate or an integer beyond 64 bits
            text = None
    if text is None:
        text = json.dumps(value, ensure_ascii=False)
    try:
        conn.execute("INSERT OR REPLACE INTO docs (name, value) VALUES (?, ?)", (name, text))
    except UnicodeEncodeError:  # a lone surrogate cannot be stored as UTF-8 text: its \u escape can
        conn.execute("INSERT OR REPLACE INTO docs (name, value) VALUES (?, ?)", (name, json.dumps(value)))


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class SqliteLedgerStore:
    """The ledger as rows in `wikirag_index.sqlite`: a `ledger` document (version, meta, pending) and one
    `ledger_notes` row per note. `save_rows` writes the head and only the given notes in one transaction;
    `save` (the whole document) remains for callers that have one."""

    def __init__(self, workspace_dir: Path) -> None:
        self.workspace_dir = Path(workspace_dir)
        self.path = self.workspace_dir / INDEX_DB_FILENAME
        self.location = str(self.path)
        self._conn: sqlite3.Connection | None = None

    @property
    def _legacy(self) -> Path:
        return self.workspace_dir / LEDGER_FILENAME

    def _db(self, create: bool = True) -> sqlite3.Connection | None:
        if self._conn is None:
            self._conn = connect_index_db(self.workspace_dir, create=create)
        return self._conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def exists(self) -> bool:
        if self._legacy.exists():
            return True
        conn = self._db(create=False)
        return conn is not None and get_doc(conn, "ledger") is not None

    def load(self) -> dict | None:
        """The whole document (head + `notes`), or None when this workspace has no ledger yet. A JSON
        ledger left by an older wikirag is moved in first."""
        return whole_document(self)

    def load_summaries(self) -> tuple[dict, dict[str, RowSummary]] | None:
        """The head and every note's RowSummary (its row is not decoded), or None without a ledger."""
        self._migrate()
        conn = self._db(create=False)
        head = get_doc(conn, "ledger") if conn is not None else None
        if head is None:
            return None
        rows = conn.execute(
            "SELECT path, digest, json_extract(entry, '$.signature'), json_extract(entry, '$.status'), "
            "json_extract(entry, '$.chunk_digest'), json_array_length(entry, '$.chunk_ids') FROM ledger_notes "
            "ORDER BY path").fetchall()
        return dict(head), {path: RowSummary(digest, signature or "", status or "indexed", chunk_digest or "",
                                             chunks or 0)
                            for path, digest, signature, status, chunk_digest, chunks in rows}

    def fetch(self, paths: list[str]) -> dict[str, dict]:
        """These notes' rows, decoded (absent paths are left out)."""
        conn = self._db(create=False)
        if conn is None or not paths:
            return {}
        rows = conn.execute("SELECT path, entry FROM ledger_notes WHERE path IN (SELECT value FROM json_each(?))",
                            (_dumps(list(paths)),)).fetchall()
        return {path: orjson.loads(entry) for path, entry in rows}

    def holders(self, names: Iterable[str], keys: Iterable[tuple[str, str]]) -> set[str]:
        """The notes whose stored rows hold an entity fragment of one of `names` or a relation fragment of
        one of `keys` (either direction)."""
        conn = self._db(create=False)
        if conn is None:
            return set()
        pairs = [relation_key_text(a, b) for a, b in keys] + [relation_key_text(b, a) for a, b in keys]
        found = conn.execute(
            "SELECT n.path FROM ledger_notes n, json_each(n.entry, '$.entities') e "
            "WHERE json_extract(e.value, '$.name') IN (SELECT value FROM json_each(?)) "
            "UNION SELECT n.path FROM ledger_notes n, json_each(n.entry, '$.relations') r "
            "WHERE json_extract(r.value, '$.src') || char(31) || json_extract(r.value, '$.tgt') "
            "IN (SELECT value FROM json_each(?))", (_dumps(sorted(names)), _dumps(pairs))).fetchall()
        return {row[0] for row in found}

    def record_counts(self) -> tuple[int, int]:
        """Distinct entity names and relation keys over every stored row."""
        conn = self._db(create=False)
        if conn is None:
            return 0, 0
        entities = conn.execute("SELECT count(DISTINCT json_extract(e.value, '$.name')) "
                                "FROM ledger_notes n, json_each(n.entry, '$.entities') e").fetchone()[0]
        relations = conn.execute(
            "SELECT count(*) FROM (SELECT DISTINCT min(s, t), max(s, t) FROM (SELECT json_extract(r.value, '$.src') "
            "AS s, json_extract(r.value, '$.tgt') AS t FROM ledger_notes n, json_each(n.entry, '$.relations') r))"
        ).fetchone()[0]
        return entities, relations

    def head(self) -> dict | None:
        """The document without its notes (version, meta, pending), read without touching the note rows."""
        if self._legacy.exists():
            data = json.loads(self._legacy.read_text(encoding="utf-8"))
            return {k: v for k, v in data.items() if k != "notes"}
        conn = self._db(create=False)
        head = get_doc(conn, "ledger") if conn is not None else None
        return None if head is None else dict(head)

    def _migrate(self) -> None:
        if not self._legacy.exists():
            return
        conn = self._db()
        if get_doc(conn, "ledger") is None:
            data = json.loads(self._legacy.read_text(encoding="utf-8"))
            self.save(data)
        self._legacy.unlink(missing_ok=True)  # moved (now, or by a run that died before deleting it)

    def save(self, data: Mapping[str, Any]) -> None:
        """Replace the whole document."""
        head = {k: v for k, v in data.items() if k != "notes"}
        self.save_rows(head, {p: encode_row(e) for p, e in data.get("notes", {}).items()}, replace_all=True)

    def save_rows(self, head: Mapping[str, Any], upserts: Mapping[str, tuple[str, str]], deletes: Iterable[str] = (),
                  *, replace_all: bool = False) -> None:
        """In one transaction: the head document, the `upserts` rows (path -> (digest, text), as
        ledger_rows.encode_row makes them), minus `deletes` (or every other row, with `replace_all`)."""
        conn = self._db()
        conn.execute("BEGIN IMMEDIATE")
        try:
            if replace_all:
                conn.execute("DELETE FROM ledger_notes")
            else:
                conn.executemany("DELETE FROM ledger_notes WHERE path = ?", [(p,) for p in deletes])
            conn.executemany("INSERT OR REPLACE INTO ledger_notes (path, entry, digest) VALUES (?, ?, ?)",
                             [(p, text, digest) for p, (digest, text) in upserts.items()])
            put_doc(conn, "ledger", dict(head))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def delete(self) -> None:
        self._legacy.unlink(missing_ok=True)
        conn = self._db(create=False)
        if conn is not None:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("DELETE FROM ledger_notes")
            conn.execute("DELETE FROM docs WHERE name = 'ledger'")
            conn.execute("COMMIT")
