"""The ledger's notes: path -> NoteEntry, read from the store row by row as a run asks for them.

A run reads every note's signature and status (is it changed?) and chunk figures (totals, the search files),
and the full entry of the few notes it rewrites. So a loaded table holds each stored note as a `RowSummary`
(the fields the store extracted without decoding the row) until someone asks for its entry; then the rows
asked for are fetched in one query and decoded. Iterating the entries (`values`, `items`) decodes every row,
as before. `dirty` names the paths set or removed since the last save; `digests` the stored row digest of
every other note. The entity and relation indexes (name -> fragments of every note) are kept current as
notes are set and removed once built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping
from typing import Any, Generic, TypeVar

from wikirag.graph.records import EntityFragment, RelationFragment
from wikirag.storage.ledger_rows import RowSummary

K = TypeVar("K")
F = TypeVar("F")


class FragmentIndex(Mapping[K, list[F]], Generic[K, F]):
    """key -> fragments from every note, kept as key -> {path: fragments} so one note is replaced alone."""

    def __init__(self) -> None:
        self._by_key: dict[K, dict[str, list[F]]] = {}

    def add(self, path: str, fragments: dict[K, list[F]]) -> None:
        for key, items in fragments.items():
            self._by_key.setdefault(key, {})[path] = items

    def remove(self, path: str, keys: Iterable[K]) -> None:
        for key in keys:
            bucket = self._by_key.get(key)
            if bucket is not None:
                bucket.pop(path, None)
                if not bucket:
                    del self._by_key[key]

    def __getitem__(self, key: K) -> list[F]:
        return [f for items in self._by_key[key].values() for f in items]

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def __iter__(self) -> Iterator[K]:
        return iter(self._by_key)

    def __len__(self) -> int:
        return len(self._by_key)


def relation_key(fragment: RelationFragment) -> tuple[str, str]:
    return (fragment.src, fragment.tgt) if fragment.src <= fragment.tgt else (fragment.tgt, fragment.src)


def _entity_groups(entry: Any) -> dict[str, list[EntityFragment]]:
    groups: dict[str, list[EntityFragment]] = {}
    for fragment in entry.entities:
        groups.setdefault(fragment.name, []).append(fragment)
    return groups


def _relation_groups(entry: Any) -> dict[tuple[str, str], list[RelationFragment]]:
    groups: dict[tuple[str, str], list[RelationFragment]] = {}
    for fragment in entry.relations:
        groups.setdefault(relation_key(fragment), []).append(fragment)
    return groups


class NoteTable(MutableMapping[str, Any]):
    """path -> NoteEntry. An entry changed in place must be set again (`table[path] = entry`) to be saved and
    re-indexed. `rows` (path -> RowSummary) are stored notes not decoded yet; `fetch(paths)` returns their
    entries."""

    def __init__(self, entries: Mapping[str, Any] | None = None, *, rows: Mapping[str, RowSummary] | None = None,
                 fetch: Callable[[list[str]], Mapping[str, Any]] | None = None) -> None:
        self._entries: dict[str, Any] = dict(entries or {})
        self._rows: dict[str, RowSummary] = dict(rows or {})
        self._fetch = fetch
        self.dirty: set[str] = set(self._entries)
        self.digests: dict[str, str] = {p: r.digest for p, r in self._rows.items()}  # stored rows, by path
        self._entities: FragmentIndex[str, EntityFragment] | None = None
        self._relations: FragmentIndex[tuple[str, str], RelationFragment] | None = None
        self._keys: dict[str, tuple[set[str], set[tuple[str, str]]]] = {}  # what each path is indexed under

    # --- reading ---
    def __getitem__(self, path: str) -> Any:
        entry = self._entries.get(path)
        if entry is None:
            if path not in self._rows:
                raise KeyError(path)
            self.load([path])
            entry = self._entries[path]
        return entry

    def __contains__(self, path: object) -> bool:
        return path in self._entries or path in self._rows

    def __iter__(self) -> Iterator[str]:
        return iter([*self._entries, *self._rows])  # a copy: reading entries while iterating moves them

    def __len__(self) -> int:
        return len(self._entries) + len(self._rows)

    def values(self) -> Any:
        self.load_all()
        return self._entries.values()

    def items(self) -> Any:
        self.load_all()
        return self._entries.items()

    def load(self, paths: Iterable[str]) -> None:
        """Decode these stored notes now, in one fetch (paths already decoded or absent are ignored)."""
        wanted = list(dict.fromkeys(p for p in paths if p in self._rows))  # once each, in order
        if not wanted:
            return
        if self._fetch is None:
            raise KeyError(wanted[0])
        found = self._fetch(wanted)
        missing = [p for p in wanted if p not in found]
        if missing:
            raise LookupError(f"ledger row of {missing[0]!r} vanished from the store while this run read it")
        for path in wanted:
            del self._rows[path]
            self._entries[path] = found[path]
            self._index(path, found[path])

    def load_all(self) -> None:
        self.load(list(self._rows))

    @property
    def lazy(self) -> bool:
        """Some stored notes are not decoded yet."""
        return bool(self._rows)

    def summary(self, path: str) -> RowSummary | None:
        """What a run reads of every note, without decoding its row; None for an unknown path."""
        row = self._rows.get(path)
        if row is not None:
            return row
        entry = self._entries.get(path)
        if entry is None:
            return None
        return RowSummary(self.digests.get(path, ""), entry.signature, entry.status, entry.chunk_digest,
                          len(entry.chunk_ids))

    def summaries(self) -> Iterator[tuple[str, RowSummary]]:
        for path in self:
            yield path, self.summary(path)  # type: ignore[misc]

    # --- writing ---
    def __setitem__(self, path: str, entry: Any) -> None:
        self._rows.pop(path, None)
        self._unindex(path)
        self._entries[path] = entry
        self._index(path, entry)
        self.dirty.add(path)

    def __delitem__(self, path: str) -> None:
        if path in self._rows:
            del self._rows[path]
        else:
            del self._entries[path]
            self._unindex(path)
        self.dirty.add(path)

    def clear(self) -> None:
        self.dirty |= set(self)
        self._entries.clear()
        self._rows.clear()
        self._entities = self._relations = None
        self._keys = {}

    def popitem(self) -> tuple[str, Any]:
        raise NotImplementedError("NoteTable.popitem: remove notes by path")

    def saved(self, digests: Mapping[str, str], removed: Iterable[str]) -> None:
        """The store now holds these rows (and not the removed ones): nothing is dirty."""
        self.digests.update(digests)
        for path in removed:
            self.digests.pop(path, None)
        self.dirty.clear()

    # --- the fragment indexes ---
    @property
    def indexed(self) -> bool:
        return self._entities is not None

    def indexes(self) -> tuple[FragmentIndex, FragmentIndex]:
        if self._entities is None or self._relations is None:
            self.load_all()
            self._entities, self._relations, self._keys = FragmentIndex(), FragmentIndex(), {}
            for path, entry in self._entries.items():
                self._index(path, entry)
        return self._entities, self._relations

    def _unindex(self, path: str) -> None:
        keys = self._keys.pop(path, None)
        if keys is not None and self._entities is not None and self._relations is not None:
            self._entities.remove(path, keys[0])
            self._relations.remove(path, keys[1])

    def _index(self, path: str, entry: Any) -> None:
        if self._entities is None or self._relations is None:
            return
        entities, relations = _entity_groups(entry), _relation_groups(entry)
        self._entities.add(path, entities)
        self._relations.add(path, relations)
        self._keys[path] = (set(entities), set(relations))
