"""wikirag's own record of what each note contributed to the LightRAG store.

LightRAG cannot tell which records came from which note when they were written directly (and its
`adelete_by_doc_id` knows nothing of them), so the ledger keeps, per note: the content digest, a
signature of everything the note's records depend on, its route and status, its chunk ids and its
entity/relation fragments. Every entity and relation in the store is re-derivable from the ledger.

Crash safety is write-ahead: before touching LightRAG, the new ledger is saved with `pending` naming
every chunk, entity and relation the run will rewrite; after the stores are flushed, `pending` is
cleared. A run that finds `pending` set (a crash, a kill -9, Ctrl-C) redoes those writes first. Every save
replaces the whole document atomically, wherever it lives (storage.LedgerStore): a file in the workspace
folder (temp file, fsync, rename), or tables in the PostgreSQL database that holds the index.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikirag.graph.records import EntityFragment, NoteContribution, RelationFragment
from wikirag.storage.fs import LEDGER_FILENAME
from wikirag.storage.ledger_store import FileLedgerStore, LedgerStore

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
    """Writes a run promised and may not have finished (sets here, sorted lists on disk)."""

    chunk_notes: set[str] = field(default_factory=set)  # notes whose chunks must be (re)written
    delete_chunks: set[str] = field(default_factory=set)
    entities: set[str] = field(default_factory=set)  # names to re-derive (or delete if gone)
    relations: set[tuple[str, str]] = field(default_factory=set)  # sorted (src, tgt) keys to re-derive

    def merge(self, other: Pending) -> None:
        self.chunk_notes |= other.chunk_notes
        self.delete_chunks |= other.delete_chunks
        self.entities |= other.entities
        self.relations |= other.relations

    def empty(self) -> bool:
        return not (self.chunk_notes or self.delete_chunks or self.entities or self.relations)

    def to_dict(self) -> dict[str, list]:
        return {"chunk_notes": sorted(self.chunk_notes), "delete_chunks": sorted(self.delete_chunks),
                "entities": sorted(self.entities), "relations": [list(r) for r in sorted(self.relations)]}

    @classmethod
    def from_dict(cls, data: dict[str, list]) -> Pending:
        return cls(set(data.get("chunk_notes", [])), set(data.get("delete_chunks", [])),
                   set(data.get("entities", [])), {tuple(r) for r in data.get("relations", [])})


@dataclass
class Ledger:
    meta: dict[str, Any] = field(default_factory=dict)  # embedding identity, chunking, vault
    notes: dict[str, NoteEntry] = field(default_factory=dict)
    pending: Pending = field(default_factory=Pending)
    store: LedgerStore | None = field(default=None, repr=False, compare=False)  # where it was loaded from

    # --- persistence ---
    @classmethod
    def load(cls, where: Path | LedgerStore) -> Ledger:
        """From a workspace folder (the file store) or any LedgerStore; `save()` writes back there."""
        store = FileLedgerStore(where) if isinstance(where, Path) else where
        data = store.load()
        if data is None:
            return cls(store=store)
        if data.get("version") != LEDGER_VERSION:
            raise ValueError(f"{store.location}: ledger version {data.get('version')} is not {LEDGER_VERSION}")
        notes = {p: _entry_from_dict(e) for p, e in data["notes"].items()}
        return cls(meta=data.get("meta", {}), notes=notes, pending=Pending.from_dict(data.get("pending", {})),
                   store=store)

    def save(self, where: Path | LedgerStore | None = None) -> None:
        store = FileLedgerStore(where) if isinstance(where, Path) else (where or self.store)
        if store is None:
            raise ValueError("Ledger.save: this ledger was not loaded from a store; say where to save it")
        data = {
            "version": LEDGER_VERSION,
            "meta": self.meta,
            "pending": self.pending.to_dict(),
            "notes": {p: _entry_to_dict(e) for p, e in sorted(self.notes.items())},
        }
        store.save(data)
        self.store = store

    # --- derived views ---
    def entity_index(self) -> dict[str, list[EntityFragment]]:
        index: dict[str, list[EntityFragment]] = {}
        for entry in self.notes.values():
            for fragment in entry.entities:
                index.setdefault(fragment.name, []).append(fragment)
        return index

    def relation_index(self) -> dict[tuple[str, str], list[RelationFragment]]:
        index: dict[tuple[str, str], list[RelationFragment]] = {}
        for entry in self.notes.values():
            for fragment in entry.relations:
                index.setdefault(tuple(sorted((fragment.src, fragment.tgt))), []).append(fragment)
        return index


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


__all__ = ["Ledger", "NoteEntry", "Pending", "LEDGER_FILENAME"]
