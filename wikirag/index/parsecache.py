"""A cache of parsed notes (and their body token counts) in the store, one SQLite row per note, keyed by path
with each file's digest, size and modification time.

parse_note is pure, so a note whose bytes have the same digest parses the same: it is not parsed again. A
note whose size and nanosecond mtime still equal the row's, modified well before the row was written (not
"racy", as git says) and read without problems then, is not even read: its digest is taken from the row.
Rows hold JSON, not pickle: a store folder can travel with a synced vault, and loading it must never run
code. Only rows whose note changed are written; a damaged database is ignored (and rebuilt).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterable
from dataclasses import MISSING, asdict
from pathlib import Path
from typing import Any

import orjson

from wikirag.models import Heading, ParsedNote, WikiLink
from wikirag.storage.sqlite_store import connect_index_db, get_doc, index_db_transaction, put_doc
from wikirag.vault.memory import cyclic_gc_paused

# Bump when a row's encoding or what the parser makes of the same bytes changes. 3: rows are head JSON + newline
# + rest JSON (CachedNote); 4: the head checks the rest; 5: a frontmatter date that is none stays text;
# 6: YAML 1.2 scalars (no, on, 1:30 and dates stay text), list items kept whole, escaped links are text,
# no setext heading under a quote; 7: inline `$…$` math holds no link or tag, a duplicate YAML key is invalid
# frontmatter, an image inside a link is an embed, a block id names a block only on its last line,
# a Markdown link's text may wrap within a paragraph; 8: a long context is cut around the link itself, not the
# first place its text shows in the sentence; 9: a NUL written as a YAML escape or a `%00` in a link is U+FFFD,
# an integer of over 4,300 digits its text; 10: a fence may open a list item on its marker's line (`- ```js`);
# 11: a fence in a list item ends with the item; 12: a tab-indented closing fence in a list item closes;
# 13: a link inside a link's text is the link, the outer one text; 14: a Markdown link's text may hold inline code;
# 15: indented code inside a list item; 16: a YAML boolean among aliases is `true`/`false`, not `True`;
# 17: body tokens and routing's character figures leave a pasted image's payload out (markdown.payloads);
# 18: a link's context (its relation's description) leaves HTML tags out; 19: an Excalidraw drawing's lines are
# payloads, compressed or JSON (body tokens, routing figures), and a float title or alias reads as JavaScript
# writes it (1e3: 1000); 20: inline tags open where Obsidian's inline chunks start (`#a#b`, `**#t**`, `[[x]]#t`)
# and stand in a link's text, and a heading inside a blockquote or callout is no heading (docs/parsing.md); an
# Excalidraw drawing is one payload, its stand-in one line (body tokens); 21: a base64 run broken into lines
# (a PEM block, MIME's) is a payload (body tokens, routing figures); 22: a frontmatter `wikirag:` value that is
# no route is a frontmatter_error line.
CACHE_VERSION = 22
RACY_NS = 2_000_000_000  # a file modified this close before its row was written may change unseen


class ParseCache(dict):
    """path -> (digest, parsed note, body tokens); `stats` holds path -> (size, mtime_ns) for the rows whose
    stat data can be trusted in place of reading the file; `figures` path -> (digest, routing's character
    figures of that text: plan.routing.char_figures)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.stats: dict[str, tuple[int, int]] = {}
        self.figures: dict[str, tuple[str, tuple[int, int, int]]] = {}

    def valid_figures(self, digests: dict[str, str]) -> dict[str, tuple[int, int, int]]:
        """The figures still valid for the notes' current digests."""
        return {p: f for p, (d, f) in self.figures.items() if digests.get(p) == d}


# What every run reads of every note (names, routing overrides, figures), decoded when a row is loaded; the
# rest (text, headings, links with their contexts: most of a row) is decoded when first read (CachedNote).
_HEAD_FIELDS = ("path", "name", "title", "type", "aliases", "tags", "frontmatter_error", "body_line_offset",
                "links_in_code_ignored", "words", "route_override")
_HEAD_KEYS = frozenset(_HEAD_FIELDS)
_NOTE_FIELDS = ParsedNote.__dataclass_fields__
_REST_FIELDS = tuple(f for f in _NOTE_FIELDS if f not in _HEAD_FIELDS)
_LINK_FIELDS = frozenset(WikiLink.__dataclass_fields__)
_HEADING_FIELDS = frozenset(Heading.__dataclass_fields__)
_MATERIALIZE = threading.Lock()


class CachedNote(ParsedNote):
    """A ParsedNote read from a parse-cache row. Its head fields are set; the others are decoded from the row
    on first read of any of them, and the object then becomes a plain ParsedNote (its class is switched), equal
    to what parse_note gave. An edit run reads the text and links of the notes it re-derives, not of 13,000."""

    def _materialize(self) -> ParsedNote:
        with _MATERIALIZE:
            if type(self) is CachedNote and "_rest" not in self.__dict__:  # made by CachedNote(...), not a row
                self.__class__ = ParsedNote  # type: ignore[assignment]
            elif type(self) is CachedNote:
                rest = orjson.loads(self.__dict__["_rest"])  # its checksum was checked when the row was loaded
                rest["headings"] = [_built(Heading, _HEADING_FIELDS, h) for h in rest.get("headings", ())]
                links = rest.get("links", [])
                for i, link in enumerate(links):
                    link["section"] = tuple(link.get("section", ()))
                    links[i] = _built(WikiLink, _LINK_FIELDS, link)
                _fill_defaults(rest, _REST_FIELDS)
                del self.__dict__["_rest"]
                self.__dict__.update((name, rest[name]) for name in _REST_FIELDS)
                self.__class__ = ParsedNote  # type: ignore[assignment]
        return self

    def __eq__(self, other: object) -> bool:
        return self._materialize() == other

    __hash__ = None  # type: ignore[assignment]  (as ParsedNote's: a dataclass with eq)


def _lazy_field(name: str) -> property:
    def read(self: CachedNote) -> Any:
        return getattr(self._materialize(), name)

    def write(self: CachedNote, value: Any) -> None:
        setattr(self._materialize(), name, value)

    return property(read, write)


for _name in _REST_FIELDS:
    setattr(CachedNote, _name, _lazy_field(_name))


def _fill_defaults(data: dict, names: tuple[str, ...]) -> None:
    """A field a row lacks (written before the field existed) gets the field's default."""
    for name in names:
        if name not in data:
            spec = _NOTE_FIELDS[name]
            data[name] = spec.default_factory() if spec.default is MISSING else spec.default  # type: ignore[misc]


def _note_from_row(row: bytes) -> CachedNote | None:
    """The note a row holds (its UTF-8 bytes, as SQLite stores the text): its head decoded now, the rest kept as
    JSON bytes until read; None for a row whose rest does not have the checksum its head records (damaged or
    edited: the note is read and parsed again). Bytes, not text: no row is decoded to a str only to be encoded
    again for its checksum (a third of the load at 13,000 notes)."""
    head_text, _, rest_text = row.partition(b"\n")
    head = orjson.loads(head_text)
    if not isinstance(head, dict) or head.pop("rest_crc", None) != _crc(rest_text):
        return None
    if head.keys() != _HEAD_KEYS:  # a row from before a field existed (or after one went): defaults, no extras
        _fill_defaults(head, _HEAD_FIELDS)
        head = {name: head[name] for name in _HEAD_FIELDS}
    head["_rest"] = rest_text
    note = object.__new__(CachedNote)
    note.__dict__ = head  # the decoded head becomes the note's own attributes: no copy per row
    return note


def _row_text(note: ParsedNote) -> str:
    """A row: the head fields' JSON (and the rest's checksum), a newline, the other fields' JSON (JSON text
    holds no raw newline)."""
    rest = json.dumps({name: _plain(getattr(note, name)) for name in _REST_FIELDS}, ensure_ascii=False)
    head = {name: getattr(note, name) for name in _HEAD_FIELDS}
    head["rest_crc"] = _crc(rest.encode("utf-8", "surrogatepass"))
    return json.dumps(head, ensure_ascii=False) + "\n" + rest


def _crc(rest: bytes) -> int:
    """What a row's rest is checked by when loaded (its decoding is deferred past the load's error handling):
    the CRC of its UTF-8 bytes, as SQLite keeps them. A CRC is enough against accidents, as for index.derived's
    rows."""
    return zlib.crc32(rest)


def _plain(value: Any) -> Any:
    """Headings and links as dicts (dataclasses.asdict on a list of them)."""
    if isinstance(value, list) and value and hasattr(value[0], "__dataclass_fields__"):
        return [asdict(item) for item in value]
    return value


def _built(cls: type, fields: frozenset[str], data: dict) -> Any:
    """`cls(**data)`. When `data` holds exactly the dataclass's fields its __init__ would only copy them (a
    frozen one through object.__setattr__, field by field): the dict becomes the instance's own, a third of
    the time for the 48,000 links and headings of 13,000 notes. Anything else goes through __init__."""
    if data.keys() != fields:
        return cls(**data)
    obj = object.__new__(cls)
    obj.__dict__.update(data)
    return obj


def _key(encoding: str) -> dict[str, Any]:
    return {"version": CACHE_VERSION, "encoding": encoding}


def load_parse_cache(workspace_dir: Path, encoding: str) -> ParseCache:
    """The cached rows; empty when missing, stale (another encoding or version) or unreadable."""
    cache = ParseCache()
    try:
        conn = connect_index_db(workspace_dir, create=False)
        if conn is None:
            return cache
        try:
            if get_doc(conn, "parse_cache") != _key(encoding):
                return cache
            rows = conn.execute("SELECT path, digest, CAST(note AS BLOB), tokens FROM parsed_notes").fetchall()
            stats = conn.execute("SELECT path, size, mtime_ns, written_ns FROM parsed_stats").fetchall()
            figures = conn.execute("SELECT path, digest, body, prose, covered FROM parsed_figures").fetchall()
        finally:
            conn.close()
        with cyclic_gc_paused():
            for path, digest, note, tokens in rows:
                cached = _note_from_row(note)
                if cached is not None:
                    cache[path] = (digest, cached, tokens)
        cache.stats = {p: (size, mtime) for p, size, mtime, written in stats
                       if p in cache and mtime < written - RACY_NS}
        cache.figures = {p: (digest, (body, prose, covered)) for p, digest, body, prose, covered in figures}
    except (sqlite3.Error, ValueError, TypeError, KeyError):
        return ParseCache()
    return cache


def save_parse_cache(workspace_dir: Path, encoding: str, notes: dict[str, ParsedNote], digests: dict[str, str],
                     body_tokens: dict[str, int], cached: dict[str, tuple] | None = None,
                     stats: dict[str, tuple[int, int]] | None = None, unread_ok: set[str] | None = None,
                     figures: dict[str, tuple[int, int, int]] | None = None) -> int:
    """Write the rows whose digest differs from `cached` (the rows loaded) and delete the notes gone; returns
    the rows written. `stats` (path -> size, mtime_ns as scanned) is recorded for the notes in `unread_ok`
    (read without problems), the only ones a later run may take from their stat data. `figures` (path ->
    routing's character figures of the note's current text) is recorded where the cache lacks it."""
    cached = cached or {}
    unread_ok = unread_ok or set()
    stats = stats or {}
    now = time.time_ns()
    try:
        with index_db_transaction(workspace_dir) as conn:
            if _emptied_for_version(conn, encoding):
                cached = {}
            changed = [p for p in notes if p in body_tokens and (p not in cached or cached[p][0] != digests[p])]
            _delete_rows(conn, [p for p in cached if p not in notes])
            old_figures = getattr(cached, "figures", {})
            conn.executemany("INSERT OR REPLACE INTO parsed_figures (path, digest, body, prose, covered) "
                             "VALUES (?, ?, ?, ?, ?)", [(p, digests[p], *f) for p, f in sorted((figures or {}).items())
                                                        if p in notes and old_figures.get(p) != (digests[p], tuple(f))])
            conn.executemany("INSERT OR REPLACE INTO parsed_notes (path, digest, note, tokens) VALUES (?, ?, ?, ?)",
                             [(p, digests[p], _row_text(notes[p]), body_tokens[p]) for p in changed])
            old_stats = getattr(cached, "stats", {})
            fresh = [(p, *stats[p], now) for p in notes
                     if p in stats and p in unread_ok and old_stats.get(p) != stats[p]]
            conn.executemany("DELETE FROM parsed_stats WHERE path = ?",
                             [(p,) for p in notes if p not in unread_ok or p not in stats])
            conn.executemany("INSERT OR REPLACE INTO parsed_stats (path, size, mtime_ns, written_ns) "
                             "VALUES (?, ?, ?, ?)", fresh)
    except sqlite3.Error:
        return 0  # only a shortcut: the next run parses again
    return len(changed)


def refresh_parse_cache(workspace_dir: Path, encoding: str, vault: Any, body_tokens: dict[str, int],
                        paths: set[str]) -> set[str]:
    """Bring the rows of `paths` (the notes `watch` read again, made or removed) in step with `vault`, its
    stat data included, so that the next `wikirag index` takes them from the cache rather than reading and
    hashing every note edited under the watch. Only rows that differ (or whose stat data was racy) are written.
    Returns the paths whose stat data is racy now (modified within RACY_NS): their rows are not trusted yet,
    and the caller refreshes them again later. Nothing on a database error: the cache is only a shortcut."""
    now = time.time_ns()
    racy = {p for p in paths if p in vault.clean and p in vault.stats and vault.stats[p][1] >= now - RACY_NS}
    try:
        with index_db_transaction(workspace_dir) as conn:
            _emptied_for_version(conn, encoding)
            digests = dict(conn.execute("SELECT path, digest FROM parsed_notes").fetchall())
            stats = {p: (size, mtime, mtime < written - RACY_NS) for p, size, mtime, written
                     in conn.execute("SELECT path, size, mtime_ns, written_ns FROM parsed_stats").fetchall()}
            kept = {p for p in paths if p in vault.notes and p in body_tokens}
            _delete_rows(conn, paths - kept)
            conn.executemany("INSERT OR REPLACE INTO parsed_notes (path, digest, note, tokens) VALUES (?, ?, ?, ?)",
                             [(p, vault.digests[p], _row_text(vault.notes[p]), body_tokens[p]) for p in sorted(kept)
                              if digests.get(p) != vault.digests[p]])
            trusted = {p for p in kept if p in vault.clean and p in vault.stats}
            conn.executemany("DELETE FROM parsed_stats WHERE path = ?", [(p,) for p in sorted(kept - trusted)])
            conn.executemany("INSERT OR REPLACE INTO parsed_stats (path, size, mtime_ns, written_ns) "
                             "VALUES (?, ?, ?, ?)", [(p, *vault.stats[p], now) for p in sorted(trusted)
                                                     if stats.get(p) != (*vault.stats[p], True)])
    except (sqlite3.Error, OSError):
        return set()
    return racy


_TABLES = ("parsed_notes", "parsed_stats", "parsed_figures")  # a note's rows: each keyed by its path


def _emptied_for_version(conn: sqlite3.Connection, encoding: str) -> bool:
    """Delete every row when they were written by another cache version or encoding (and record this one's):
    True when it did."""
    if get_doc(conn, "parse_cache") == _key(encoding):
        return False
    for table in _TABLES:
        conn.execute(f"DELETE FROM {table}")
    put_doc(conn, "parse_cache", _key(encoding))
    return True


def _delete_rows(conn: sqlite3.Connection, paths: Iterable[str]) -> None:
    """Delete the notes' rows from every table."""
    gone = [(p,) for p in paths]
    for table in _TABLES:
        conn.executemany(f"DELETE FROM {table} WHERE path = ?", gone)
