"""wikirag's own record of what each note contributed to the LightRAG store.

LightRAG cannot tell which records came from which note when they were written directly (and its
`adelete_by_doc_id` knows nothing of them), so the ledger keeps, per note: the content digest, a
signature of everything the note's records depend on, its route and status, its chunk ids and its
entity/relation fragments. Every entity and relation in the store is re-derivable from the ledger.

Crash safety is write-ahead: before touching LightRAG, the new ledger is saved with `pending` naming
every chunk, entity and relation the run will rewrite; after the stores are flushed, `pending` is
cleared. A run that finds `pending` set (a crash, a kill -9, Ctrl-C) redoes those writes first. Every save
is one atomic transaction wherever the ledger lives (storage.LedgerStore): rows in `wikirag_index.sqlite` in
the workspace folder, or tables in the PostgreSQL database that holds the index. A save writes the head
(meta, pending) and only the notes set or removed since the last save (`NoteTable` tracks them), so a
one-note change writes one row, not the whole ledger.

Reads are per note too (index.note_table): a loaded ledger holds each note's signature, status and chunk
figures as the store extracted them, and decodes a note's row when the run asks for its entry. Applying a
change asks the store which notes hold the touched entity names and relation keys (`fragments_of`), so a
one-note edit decodes a few rows, not 13,000. `watch` keeps one Ledger in memory across its batches, with
the entity and relation indexes (name -> fragments of every note) built once and kept current.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikirag.graph.records import EntityFragment, NoteContribution, RelationFragment
from wikirag.index.note_table import NoteTable, relation_key
from wikirag.storage.fs import LEDGER_FILENAME
from wikirag.storage.ledger_rows import encode_row
from wikirag.storage.ledger_store import LedgerStore
from wikirag.storage.sqlite_store import SqliteLedgerStore
from wikirag.vault.memory import cyclic_gc_paused

LEDGER_VERSION = 1


@dataclass
class NoteEntry:
    digest: str
    signature: str
    route: str = "inject"
    status: str = "indexed"  # indexed | pending_extraction | failed
    doc_id: str = ""
    entity: str = ""
    title: str = ""
    aliases: list[str] = field(default_factory=list)  # read by query's keyword matching
    tags: list[str] = field(default_factory=list)
    chunk_ids: list[str] = field(default_factory=list)
    chunk_digest: str = ""  # every stored field of the chunks (ids hash content only; headings carry the title)
    entities: list[EntityFragment] = field(default_factory=list)
    relations: list[RelationFragment] = field(default_factory=list)
    error: str | None = None
    hint_digest: str = ""  # the hint (and model) the note was last extracted with
    cache_keys: list[str] = field(default_factory=list)  # LightRAG cache entries of that extraction
    # LightRAG's extraction output attributed to this note, before name hygiene (index/extract.py): lets a
    # change of the vault's names be re-applied without an LLM call
    raw: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_contribution(cls, digest: str, signature: str, c: NoteContribution, **extra: Any) -> NoteEntry:
        return cls(digest, signature, doc_id=c.doc_id, entity=c.entity,
                   chunk_ids=[ch.id for ch in c.chunks], chunk_digest=chunks_digest(c), entities=list(c.entities),
                   relations=list(c.relations), **extra)


def chunks_digest(contribution: NoteContribution) -> str:
    """A hash of what the store keeps of a note's chunks: ids, text, order, tokens, heading and path."""
    fields = [(c.id, c.order, c.tokens, c.heading) for c in contribution.chunks]
    payload = json.dumps([contribution.path, fields], ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.sha1(payload.encode("utf-8")).hexdigest()


@dataclass
class Pending:
    """Writes a run promised and may not have finished (sets here, sorted lists on disk).

    `entity_vectors` and `relation_vectors` are records whose graph node or edge is written and current but whose
    vector waits for the last batch of the run that touches them (index/apply.py). On disk they are listed with
    `entities` and `relations`: a run that finds them there (after a crash) re-derives them whole."""

    chunk_notes: set[str] = field(default_factory=set)  # notes whose chunks must be (re)written
    delete_chunks: set[str] = field(default_factory=set)
    entities: set[str] = field(default_factory=set)  # names to re-derive (or delete if gone)
    relations: set[tuple[str, str]] = field(default_factory=set)  # sorted (src, tgt) keys to re-derive
    entity_vectors: set[str] = field(default_factory=set)  # names whose vector alone is owed
    relation_vectors: set[tuple[str, str]] = field(default_factory=set)

    def merge(self, other: Pending) -> None:
        self.chunk_notes |= other.chunk_notes
        self.delete_chunks |= other.delete_chunks
        self.entities |= other.entities
        self.relations |= other.relations
        self.entity_vectors |= other.entity_vectors
        self.relation_vectors |= other.relation_vectors

    def empty(self) -> bool:
        return not (self.chunk_notes or self.delete_chunks or self.entities or self.relations
                    or self.entity_vectors or self.relation_vectors)

    def to_dict(self) -> dict[str, list]:
        return {"chunk_notes": sorted(self.chunk_notes), "delete_chunks": sorted(self.delete_chunks),
                "entities": sorted(self.entities | self.entity_vectors),
                "relations": [list(r) for r in sorted(self.relations | self.relation_vectors)]}

    @classmethod
    def from_dict(cls, data: dict[str, list]) -> Pending:
        return cls(set(data.get("chunk_notes", [])), set(data.get("delete_chunks", [])),
                   set(data.get("entities", [])), {tuple(r) for r in data.get("relations", [])})


@dataclass
class Ledger:
    meta: dict[str, Any] = field(default_factory=dict)  # embedding identity, chunking, vault
    notes: NoteTable = field(default_factory=NoteTable)
    pending: Pending = field(default_factory=Pending)
    store: LedgerStore | None = field(default=None, repr=False, compare=False)  # where it was loaded from

    def __post_init__(self) -> None:
        if not isinstance(self.notes, NoteTable):
            self.notes = NoteTable(self.notes)
        self._synced_with = None  # the store whose rows equal `notes` minus `notes.dirty`

    # --- persistence ---
    @classmethod
    def load(cls, where: Path | LedgerStore) -> Ledger:
        """From a workspace folder (the SQLite file store) or any LedgerStore; `save()` writes back there."""
        store = SqliteLedgerStore(where) if isinstance(where, Path) else where
        with cyclic_gc_paused():  # many long-lived objects, no cycles: see vault.model
            return cls._load(store)

    @classmethod
    def _load(cls, store: LedgerStore) -> Ledger:
        """Row stores give each note's RowSummary and decode a note's row when it is asked for (NoteTable);
        a whole-document store gives everything at once."""
        load_summaries = getattr(store, "load_summaries", None)
        if load_summaries is not None:
            found = load_summaries()
            data = None if found is None else found[0]
        else:
            data = store.load()
        if data is None:
            ledger = cls(store=store)
        else:
            if data.get("version") != LEDGER_VERSION:
                raise ValueError(f"{store.location}: ledger version {data.get('version')} is not {LEDGER_VERSION}")
            if load_summaries is not None:
                def fetch(paths: list[str]) -> dict[str, NoteEntry]:
                    with cyclic_gc_paused():
                        return {p: _entry_from_dict(e) for p, e in store.fetch(paths).items()}

                notes = NoteTable(rows=found[1], fetch=fetch)
            else:
                notes = NoteTable({p: _entry_from_dict(e) for p, e in data["notes"].items()})
            ledger = cls(meta=data.get("meta", {}), notes=notes, pending=Pending.from_dict(data.get("pending", {})),
                         store=store)
        ledger.notes.dirty.clear()
        ledger._synced_with = store
        return ledger

    def save(self, where: Path | LedgerStore | None = None) -> None:
        """One atomic write: the head (meta, pending) and the notes changed since the last save (all of them
        when saving somewhere this ledger was not loaded from or saved to)."""
        store = SqliteLedgerStore(where) if isinstance(where, Path) else (where or self.store)
        if store is None:
            raise ValueError("Ledger.save: this ledger was not loaded from a store; say where to save it")
        head = {"version": LEDGER_VERSION, "meta": self.meta, "pending": self.pending.to_dict()}
        incremental = store is self._synced_with
        save_rows = getattr(store, "save_rows", None)
        removed: list[str] = []
        if save_rows is not None and incremental:
            dirty = self.notes.dirty
            rows = {p: encode_row(_entry_to_dict(self.notes[p])) for p in sorted(dirty) if p in self.notes}
            removed = sorted(p for p in dirty if p not in self.notes)
            save_rows(head, rows, removed)
        elif save_rows is not None:
            rows = {p: encode_row(_entry_to_dict(e)) for p, e in sorted(self.notes.items())}
            save_rows(head, rows, replace_all=True)
        else:
            rows = {}
            store.save({**head, "notes": {p: _entry_to_dict(e) for p, e in sorted(self.notes.items())}})
        self.notes.saved({p: digest for p, (digest, _) in rows.items()}, removed)
        self.store = self._synced_with = store

    # --- derived views (kept current by NoteTable; read-only) ---
    def entity_index(self) -> Mapping[str, list[EntityFragment]]:
        with cyclic_gc_paused():
            return self.notes.indexes()[0]

    def relation_index(self) -> Mapping[tuple[str, str], list[RelationFragment]]:
        with cyclic_gc_paused():
            return self.notes.indexes()[1]

    INDEX_ABOVE = 2000  # touched names and relation keys above which building the full indexes pays

    def fragments_of(self, names: set[str], keys: set[tuple[str, str]]) -> tuple[
            dict[str, list[EntityFragment]], dict[tuple[str, str], list[RelationFragment]]]:
        """Every note's fragments of just these entity names and relation keys (those no note holds are
        absent). From the indexes when they are built (`watch` keeps them) or worth building; otherwise one
        pass over the notes' fragments, so a run that touches a few names does not index 40,000."""
        if self.notes.indexed or len(names) + len(keys) > self.INDEX_ABOVE:
            entities, relations = self.entity_index(), self.relation_index()
            return ({n: entities[n] for n in names if n in entities},
                    {k: relations[k] for k in keys if k in relations})
        found_e: dict[str, list[EntityFragment]] = {}
        found_r: dict[tuple[str, str], list[RelationFragment]] = {}
        for entry in self._entries_holding(names, keys):
            for f in entry.entities:
                if f.name in names:
                    found_e.setdefault(f.name, []).append(f)
            for r in entry.relations:
                key = relation_key(r)
                if key in keys:
                    found_r.setdefault(key, []).append(r)
        return found_e, found_r

    def _row_store(self, method: str) -> Any:
        """The store's `method` when it answers for these notes: the store this ledger was loaded from or last
        saved to holds every note but the dirty ones."""
        store = self._synced_with
        return getattr(store, method, None) if store is not None and store is self.store else None

    def _entries_holding(self, names: set[str], keys: set[tuple[str, str]]) -> Any:
        """Every note that may hold one of these names or keys: asked of the store while rows are undecoded
        (its JSON functions read the rows in place), plus the notes changed since the last save."""
        holders = self._row_store("holders")
        if not self.notes.lazy or holders is None:
            return self.notes.values()
        candidates = sorted(p for p in holders(names, keys) | self.notes.dirty if p in self.notes)
        self.notes.load(candidates)
        return [self.notes[p] for p in candidates]

    def record_counts(self) -> tuple[int, int]:
        """How many entities and relations the store holds (distinct names and keys over all notes)."""
        if self.notes.indexed:
            return len(self.entity_index()), len(self.relation_index())
        counts = self._row_store("record_counts")
        if counts is not None and self.notes.lazy and not self.notes.dirty:
            return counts()
        names = {f.name for e in self.notes.values() for f in e.entities}
        keys = {relation_key(r) for e in self.notes.values() for r in e.relations}
        return len(names), len(keys)


def _entry_to_dict(entry: NoteEntry) -> dict[str, Any]:
    """Like dataclasses.asdict, without its deep copies (saving 10,000 notes a batch made that the
    index's hot spot): the dicts are only read by json.dumps."""
    data = dict(vars(entry))
    data["entities"] = [vars(f) for f in entry.entities]
    data["relations"] = [vars(f) for f in entry.relations]
    return data


def _entry_from_dict(data: dict[str, Any]) -> NoteEntry:
    data = dict(data)
    data["entities"] = [EntityFragment(**f) for f in data.get("entities", [])]
    data["relations"] = [RelationFragment(**f) for f in data.get("relations", [])]
    return NoteEntry(**data)


__all__ = ["Ledger", "NoteEntry", "NoteTable", "Pending", "LEDGER_FILENAME"]
