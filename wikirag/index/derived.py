"""What planning derived per note, kept in the store so that `wikirag index` re-derives only what changed, as
`watch` does in memory: each note's link resolutions, its routing decision and its signature, one SQLite row
per note (`derived_notes` in wikirag_index.sqlite), beside the parse cache.

Each part is valid only where everything it depends on is unchanged; the `derived_notes` document records
that context for all rows together:
- resolutions depend on the note's bytes (the row's digest) and the set of note and attachment paths;
- a decision also on the run's settings (index.run._config_key);
- a signature also on every note's entity name and the unresolved names (`names_key`), and only without an
  LLM (with one it reads linked notes' text through the hint, as planning says).
A note whose row is missing, of another digest, or damaged (a checksum per row: a hand-edited row is not
trusted) is derived from scratch. Rows hold JSON, never pickle: a store folder can travel with a synced vault.
Only rows whose content changed are written, so an edit writes a row, not the table.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import zlib
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from wikirag.graph.naming import unresolved_name
from wikirag.index.parsecache import CACHE_VERSION, CachedNote
from wikirag.lightrag.ids import normalizer_version
from wikirag.models import ParsedNote, Resolution
from wikirag.plan.routing import NoteFeatures, RouteDecision
from wikirag.storage.sqlite_store import connect_index_db, get_doc, index_db_transaction, put_doc
from wikirag.vault.links import is_note
from wikirag.vault.model import RestoredLinks

if TYPE_CHECKING:
    from wikirag.index.planning import Plan
    from wikirag.vault.model import Vault

DERIVED_VERSION = 7  # bump when a row's encoding or what it derives from changes (4: link tie-break; 7: NFC, ‹SEP›)
# 2: unresolved links carry their entity name (RestoredLinks.unresolved_names)
# 3: ... in a column of their own, so a run that reads only them never parses a row's links
# 5: entity names bounded in length (graph.naming.fit): a saved unresolved name may be too long
# 6: of case-only twins (Note.md, note.md) a bare link picks the one spelled as it is
_DOC = "derived_notes"
_STATUS = {"r": "resolved", "a": "ambiguous", "s": "self", "u": "unresolved"}
_CODE = {v: k for k, v in _STATUS.items()}
_FEATURES = tuple(NoteFeatures.__dataclass_fields__)
_ROUTES = ("inject", "extract", "skip")


def names_key(names: dict[str, str], unresolved: dict[str, str]) -> str:
    """A digest of the entity names and unresolved names a signature reads."""
    try:
        text = orjson.dumps([names, unresolved], option=orjson.OPT_SORT_KEYS)
    except TypeError:  # a lone surrogate (a YAML "\\ud800" escape in a title): orjson refuses it, json escapes it
        text = json.dumps([names, unresolved], sort_keys=True).encode()
    return hashlib.sha1(text).hexdigest()


def _check(path: str, digest: str, links: str, unresolved: str, decision: str, signature: str) -> str:
    """A row's checksum: a damaged or hand-edited row is not trusted (a CRC is enough against accidents)."""
    text = "\0".join((path, digest, links, unresolved, decision, signature))
    return str(zlib.crc32(text.encode("utf-8", "surrogatepass")))


class Derived:
    """The saved rows and their context, offered to one run: `outgoing` to Vault.load, `previous` to planning.
    Records which notes it served, so `save_derived` writes only the others' rows."""

    def __init__(self, key: dict[str, Any] | None, rows: dict[str, tuple[str, str, str, str, str, str]],
                 config_key: str) -> None:
        usable = (isinstance(key, dict) and key.get("version") == DERIVED_VERSION and key.get("cache") == CACHE_VERSION
                  and key.get("lightrag") == normalizer_version())
        key = key if usable else {}
        self.key = key
        self.rows = rows  # path -> (digest, links, unresolved, decision, signature, check) as stored
        self.paths_digest = str(key.get("paths") or "") if rows else ""
        self.config_ok = key.get("config") == config_key
        self.restored: set[str] = set()  # notes whose resolutions came from their row
        self.decided: set[str] = set()  # ... and their decision
        self.signed: set[str] = set()  # ... and their signature
        self.names_key = ""  # of the run's names, once planning computed them
        self._resolutions: dict[tuple, Resolution] = {}

    def _row(self, path: str, digest: str) -> tuple[str, str, str, str, str, str] | None:
        row = self.rows.get(path)
        if row is None or row[0] != digest or _check(path, *row[:5]) != row[5]:
            return None
        return row

    def outgoing(self, path: str, digest: str, note: ParsedNote) -> list | RestoredLinks | None:
        """The note's (link, Resolution) pairs from its row, or None (no valid row for these bytes). A note
        from the parse cache gets them as RestoredLinks: its row's links are parsed only when read."""
        row = self._row(path, digest)
        if row is None:
            return None
        unresolved = _names(row[2])
        if unresolved is None:
            return None
        if isinstance(note, CachedNote):
            pairs: list | RestoredLinks = RestoredLinks(note, partial(self._decoded, row[1]), unresolved)
        else:
            resolutions = self._decoded(row[1])
            if resolutions is None or len(resolutions) != len(note.links):
                return None
            pairs = list(zip(note.links, resolutions, strict=True))
        self.restored.add(path)
        return pairs

    def _decoded(self, links: str) -> list[Resolution] | None:
        """The Resolutions a row's links column stands for, or None when it is not a list of them."""
        known = self._resolutions
        try:
            stored = orjson.loads(links)
            if not isinstance(stored, list):
                return None
            return [known.get(key) or self._resolution(key) for key in map(_item, stored)]
        except (orjson.JSONDecodeError, TypeError, KeyError, ValueError, IndexError):
            return None

    def _resolution(self, item: tuple) -> Resolution:
        """The Resolution a stored item stands for (Resolutions are immutable: one per distinct value)."""
        status = _STATUS[item[0]]
        path = item[1] if len(item) > 1 else None
        if (path is None) != (status == "unresolved") or not all(isinstance(p, str) for p in item[1:]):
            raise ValueError(f"bad resolution {item!r}")
        hit = self._resolutions[item] = Resolution(status, path, item[2:],  # type: ignore[arg-type]
                                                   path is not None and not is_note(path))
        return hit

    def previous(self, vault: Vault, names: dict[str, str], unresolved: dict[str, str], llm_model: str) -> Plan:
        """A plan of `vault` holding the restored notes' decisions and (when no name changed and no LLM is
        configured) signatures: planning treats it as `watch`'s previous plan, so untouched notes keep them."""
        from wikirag.index.planning import Plan

        self.names_key = names_key(names, unresolved)
        decisions: dict[str, RouteDecision] = {}
        signatures: dict[str, str] = {}
        sign = self.config_ok and not llm_model and self.key.get("names") == self.names_key
        for path in self.restored if self.config_ok else ():
            row = self.rows[path]
            decision = _decision(row[3])
            if decision is None:
                continue
            decisions[path] = decision
            self.decided.add(path)
            if decision.route == "skip":
                self.signed.add(path)  # a skipped note has no signature: its row holds ""
            elif sign and len(row[4]) == 40:
                signatures[path] = row[4]
                self.signed.add(path)
        return Plan(vault, names, unresolved, signatures, decisions)


def _item(value: Any) -> tuple:
    if not isinstance(value, list):
        raise TypeError(f"bad resolution {value!r}")
    return tuple(value)


def _names(text: str) -> list[str] | None:
    """A row's unresolved names, or None when the column is not a list of strings."""
    if text == "[]":
        return []  # most notes: no unresolved link
    try:
        names = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    return names if isinstance(names, list) and all(isinstance(n, str) for n in names) else None


def _decision(text: str) -> RouteDecision | None:
    try:
        route, reason, source, sections, values = orjson.loads(text)
        if route not in _ROUTES or len(values) != len(_FEATURES) or not isinstance(reason, str):
            return None
        spans = [(int(a), int(b)) for a, b in sections] if sections else []
        return RouteDecision(route, reason, NoteFeatures(*values), source, spans)
    except (orjson.JSONDecodeError, TypeError, ValueError):
        return None


def _encode_decision(decision: RouteDecision) -> str:
    f = decision.features
    return orjson.dumps([decision.route, decision.reason, decision.source, decision.sections,
                         [getattr(f, name) for name in _FEATURES]]).decode()


def _encode_links(pairs: list) -> tuple[str, str]:
    """The links column, per link its resolution: [status code, path, *candidates], or ["u"] when unresolved;
    and the unresolved column: the entity names planning gives the unresolved links (graph.naming), so a run
    reads them without the links."""
    links = _dumps([[_CODE[r.status], r.path, *r.candidates] if r.path is not None else [_CODE[r.status]]
                    for _, r in pairs])
    names = [name for link, r in pairs if r.path is None and (name := unresolved_name(link))]
    return links, _dumps(names)


def _dumps(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # a lone surrogate in a name: orjson refuses it, json escapes it
        return json.dumps(value)


def load_derived(workspace_dir: Path, config_key: str) -> Derived:
    """The saved rows; none when missing or unreadable (the run derives everything, as a first one does)."""
    try:
        conn = connect_index_db(workspace_dir, create=False)
        if conn is None:
            return Derived(None, {}, config_key)
        try:
            key = get_doc(conn, _DOC)
            rows = conn.execute("SELECT path, digest, links, unresolved, decision, signature, checksum "
                                "FROM derived_notes")
            return Derived(key, {row[0]: row[1:] for row in rows}, config_key)
        finally:
            conn.close()
    except (sqlite3.Error, ValueError):
        return Derived(None, {}, config_key)


def save_derived(workspace_dir: Path, config_key: str, plan: Plan, derived: Derived | None) -> int:
    """Bring the rows in step with `plan` (of a vault `Vault.load` made): write the rows whose content differs
    from the stored one, delete those of notes gone, and record the context. Returns the rows written."""
    derived = derived or Derived(None, {}, config_key)
    vault = plan.vault
    key = {"version": DERIVED_VERSION, "cache": CACHE_VERSION, "lightrag": normalizer_version(),
           "config": config_key, "paths": vault.paths_digest,
           "names": derived.names_key or names_key(plan.names, plan.unresolved)}
    kept = derived.restored & derived.decided & derived.signed if derived.key == key else set()
    fresh = []
    for path in sorted(vault.notes):
        if path in kept:
            continue  # every part came from its row: the row stands
        digest = vault.digests[path]
        row = (digest, *_encode_links(vault.outgoing(path)), _encode_decision(plan.decisions[path]),
               plan.signatures.get(path, ""))
        row = (*row, _check(path, *row))
        if derived.rows.get(path) != row:  # (a damaged checksum is written again too)
            fresh.append((path, *row))
    gone = [(p,) for p in derived.rows if p not in vault.notes]
    if not fresh and not gone and derived.key == key:
        return 0
    try:
        with index_db_transaction(workspace_dir) as conn:
            conn.executemany("DELETE FROM derived_notes WHERE path = ?", gone)
            conn.executemany("INSERT OR REPLACE INTO derived_notes (path, digest, links, unresolved, decision, "
                             "signature, checksum) VALUES (?, ?, ?, ?, ?, ?, ?)", fresh)
            put_doc(conn, _DOC, key)
    except sqlite3.Error:
        return 0  # only a shortcut: the next run derives again
    return len(fresh)

