"""Obsidian's link resolution, as data.

`LinkIndex` is built once from the vault's note and attachment paths; `add`/`remove` keep it current for
one file. Lookups go through dicts keyed by NFC + casefold text (notes with and without `.md`), so
resolving a link never scans the vault. Rules, in order (docs/parsing.md has the fixtures):

1. An empty target (`[[#Heading]]`, `[text](#h)`) is the linking note itself: status "self".
2. `./x` and `../x` resolve from the linking note's folder, `/x` from the vault root; exact path only.
3. Otherwise the target is a name or a path, `.md` optional, case-insensitive, NFC-normalised.
   Candidates: every file whose path ends with the target (`b/Note` matches `a/b/Note.md`, and as in
   Obsidian `xab/Note.md`: the name must be whole, the folders need not be).
4. One candidate: "resolved". Several: the tie-break picks, as Obsidian does, the file whose vault path
   is exactly the target (`[[Note]]` -> `Note.md` at the root), else the shortest path among the files
   under the linking note's folder, else the shortest path of all; then the alphabetically first. A
   bare name shared by several files is "ambiguous" (with the chosen `path` and all `candidates`); a
   path-qualified target matching one path exactly is "resolved".
5. A link that lands on the linking note itself is "self". No candidate: "unresolved".
"""

from __future__ import annotations

import bisect
import posixpath
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache

from wikirag.models import Resolution, WikiLink


def fold(text: str) -> str:
    """The identity Obsidian uses for names and paths: NFC, then case-folded."""
    return unicodedata.normalize("NFC", text).casefold()


def is_note(path: str) -> bool:
    return path[-3:].lower() == ".md"


def name_keys(path: str) -> tuple[str, ...]:
    """The folded names a file answers to: `Note.md` -> ("note.md", "note"); `img.png` -> ("img.png",)."""
    base = fold(posixpath.basename(path))
    return (base, base[:-3]) if is_note(path) else (base,)


@lru_cache(maxsize=65536)  # the same targets recur across a vault
def link_name_key(target: str) -> str:
    """The folded last segment of a link target: the only name key a link can resolve through."""
    return fold(target.strip().rsplit("/", 1)[-1])


def _keys(path: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A file's folded path keys and name keys (`name_keys`), from one fold: NFC and casefold work character
    by character and never touch "/", so a folded name is the last segment of the folded path."""
    key = path.casefold() if path.isascii() else fold(path)
    paths = (key, key[:-3]) if is_note(path) else (key,)
    return paths, tuple(k.rsplit("/", 1)[-1] for k in paths)


def _answers_to(path: str, names: set[str]) -> bool:
    """Whether one of the file's `name_keys` is in `names` (without building them: this runs for every file)."""
    base = path[path.rfind("/") + 1:]
    key = base.casefold() if base.isascii() else fold(base)
    return key in names or (key[-3:] == ".md" and key[:-3] in names)


_UNRESOLVED = Resolution("unresolved")


def _clean_target(target: str) -> str:
    return (target if target.isascii() else unicodedata.normalize("NFC", target)).strip()


def _is_relative(target: str) -> bool:
    return target[0] in "./" and target.startswith(("./", "../", "/"))


def _relative_path(target: str, from_path: str) -> str | None:
    """The vault path a `./x`, `../x` or `/x` target names from the note at `from_path`; None when it climbs out
    of the vault."""
    folder = "" if target[0] == "/" else posixpath.dirname(from_path)
    joined = posixpath.join(folder, target.lstrip("/"))
    path = posixpath.normpath(joined) if joined else ""
    return None if path.startswith("../") or path in ("..", ".") else path


def wanted_name(link: WikiLink, from_path: str) -> str | None:
    """The name key every file `LinkIndex.resolve(link, from_path)` could answer with is filed under (each lookup
    it makes is by a path or name ending in that name); None when it looks nothing up. A LinkIndex built with
    `names=` holding this key resolves the link as one over all files does."""
    target = _clean_target(link.target)
    if not target:
        return None
    if _is_relative(target):
        path = _relative_path(target, from_path)
        return None if path is None else fold(posixpath.basename(path))
    return link_name_key(target)


class LinkIndex:
    """Name and path lookups for a set of vault files (notes are the `.md` ones).

    With `names`, only the files answering to one of those folded names (`name_keys`) are filed: enough to
    resolve the links whose `wanted_name` is among them, at a fraction of the cost of filing every file (a run
    that re-resolves a few edited notes among 18,000 files)."""

    def __init__(self, paths: Iterable[str] = (), names: set[str] | None = None) -> None:
        self._by_name: dict[str, list[str]] = {}
        self._by_path: dict[str, list[str]] = {}
        self._resolved: dict[str, Resolution] = {}
        self._ordered: dict[str, _Ordered] = {}  # name -> its large bucket sorted for the tie-break (`_choose`)
        for path in dict.fromkeys(paths):
            if names is None or _answers_to(path, names):
                self._put(path, new=True)

    def __contains__(self, path: str) -> bool:
        return path in self._by_path.get(fold(path), ())

    def add(self, path: str) -> None:
        self._put(path, new=False)

    def _put(self, path: str, *, new: bool) -> None:
        """File `path` under its path and name keys. `new`: it is not in the index yet, so a bucket's last entry
        says whether this call filed it already (a non-note's two keys are one); else a bucket is searched."""
        path_keys, names = _keys(path)
        for key in names:
            self._ordered.pop(key, None)
        for table, keys in ((self._by_path, path_keys), (self._by_name, names)):
            for key in keys:
                bucket = table.get(key)
                if bucket is None:
                    table[key] = [path]
                elif (bucket[-1] != path) if new else (path not in bucket):
                    bucket.append(path)

    def remove(self, path: str) -> None:
        self._resolved.pop(path, None)
        path_keys, names = _keys(path)
        for key in names:
            self._ordered.pop(key, None)
        for table, keys in ((self._by_name, names), (self._by_path, path_keys)):
            for key in keys:
                bucket = table.get(key)
                if bucket and path in bucket:
                    bucket.remove(path)
                    if not bucket:
                        del table[key]

    def duplicate_names(self) -> list[list[str]]:
        """Groups of notes sharing a name (case-insensitive), each sorted, groups sorted."""
        groups = []
        for key, paths in self._by_name.items():
            notes = [p for p in paths if is_note(p) and name_keys(p)[1] == key]
            if len(notes) > 1:
                groups.append(sorted(notes))
        return sorted(groups)


    # -- resolution -------------------------------------------------------------------------------------
    def resolve(self, link: WikiLink, from_path: str) -> Resolution:
        """Where `link`, written in the note at `from_path`, points."""
        target = _clean_target(link.target)
        if not target:
            return Resolution("self", from_path)
        if _is_relative(target):
            path = _relative_path(target, from_path)
            return _UNRESOLVED if path is None else self._exact(path, from_path)  # None: climbs out of the vault

        key = target.casefold()
        if "/" not in key:
            candidates = self._by_name.get(key, ())
            if len(candidates) == 1:  # the common case: a unique name
                return self._found(candidates[0], (), from_path)
        exact = self._by_path.get(key, ())
        if "/" in key:
            # a path-qualified target: a full vault path, else every file whose path ends with it (as a string,
            # as Obsidian compares: `b/Note` also finds `xab/Note.md`)
            if len(exact) == 1:
                return self._found(exact[0], (), from_path)
            name = link_name_key(target)
            names = self._by_name.get(name, ())
            if len(names) > _SORTED_FROM:  # Obsidian writes `[[p5/index]]` where many files are index.md
                candidates = self._order(name).ending_with(key)
            else:
                candidates = [p for p in names if any(k.endswith(key) for k in _keys(p)[0])]
            if len(candidates) == 1:
                return self._found(candidates[0], (), from_path)
        if not candidates:
            return _UNRESOLVED
        folder = fold(posixpath.dirname(from_path))
        if "/" not in key and not exact and len(candidates) > _SORTED_FROM:
            return self._choose(key, folder, from_path)
        chosen = min(candidates, key=lambda p: _rank(p, exact, folder, target))
        if "/" in key and folder and f"{folder}/{key}" in _keys(chosen)[0]:
            return self._found(chosen, (), from_path)  # the path taken from the note's folder: no doubt left
        return self._found(chosen, tuple(sorted(candidates)), from_path)

    def _choose(self, name: str, folder: str, from_path: str) -> Resolution:
        """`_rank`'s pick among the files named `name` when none has the target's exact path (so none is spelled
        as the link either): the shortest path under `folder`, else of all. Ranking every candidate for every
        link was quadratic where thousands of files share a name (an index.md per folder, each linked from its
        folder); the bucket is sorted once by folded path, where the paths under a folder lie side by side."""
        ordered = self._order(name)
        folded, paths = ordered.folded, ordered.paths
        start = bisect.bisect_left(folded, folder) if folder else len(folded)
        end = start
        while end < len(folded) and folded[end].startswith(folder):
            end += 1
        chosen = min(paths[start:end], key=lambda p: (len(p), fold(p), p)) if end > start else ordered.first
        return self._found(chosen, ordered.candidates, from_path)

    def _order(self, name: str) -> _Ordered:
        ordered = self._ordered.get(name)
        if ordered is None:
            ordered = self._ordered[name] = _Ordered(self._by_name[name])
        return ordered

    def _exact(self, path: str, from_path: str) -> Resolution:
        hits = self._by_path.get(fold(path), ())
        if not hits:
            return Resolution("unresolved")
        chosen = min(hits, key=lambda p: (p != path, p))  # case-only twins: the exact spelling first
        return self._found(chosen, (), from_path)

    def _found(self, path: str, candidates: tuple[str, ...], from_path: str) -> Resolution:
        if path == from_path:
            return Resolution("self", path, candidates, not is_note(path))
        if candidates:
            return Resolution("ambiguous", path, candidates, not is_note(path))
        hit = self._resolved.get(path)  # Resolutions are immutable: one per file is enough
        if hit is None:
            hit = self._resolved[path] = Resolution("resolved", path, (), not is_note(path))
        return hit


_SORTED_FROM = 16  # candidates; a smaller bucket is ranked whole, as sorting it would cost more


class _Ordered:
    """A bucket of files sharing a name, as `LinkIndex._choose` reads it: the folded paths sorted, the paths in
    that order, the first of all by the tie-break, and the bucket sorted as a Resolution's candidates; and for
    `ending_with`, the folded path keys reversed and sorted (a suffix is then a prefix: one bisected run)."""

    __slots__ = ("folded", "paths", "first", "candidates", "reversed", "reversed_paths")

    def __init__(self, bucket: list[str]) -> None:
        pairs = sorted((fold(p), p) for p in bucket)
        self.folded, self.paths = [f for f, _ in pairs], [p for _, p in pairs]
        self.first = min(bucket, key=lambda p: (len(p), fold(p), p))
        self.candidates = tuple(sorted(bucket))
        keys = sorted((k[::-1], p) for p in bucket for k in _keys(p)[0])
        self.reversed, self.reversed_paths = [k for k, _ in keys], [p for _, p in keys]

    def ending_with(self, key: str) -> list[str]:
        """The files one of whose folded path keys ends with `key`, as a string."""
        backwards = key[::-1]
        start = end = bisect.bisect_left(self.reversed, backwards)
        while end < len(self.reversed) and self.reversed[end].startswith(backwards):
            end += 1
        return list(dict.fromkeys(self.reversed_paths[start:end]))


def _rank(path: str, exact: Sequence[str], folder: str, target: str) -> tuple:
    """Sort key of the tie-break, Obsidian's (MetadataCache._getLinkpathDest): the exact vault path (of case-only
    twins on a case-sensitive disk, Note.md and note.md, the one spelled as the link is), then the files whose
    path starts with the linking note's folder (as a string: folder `a` also takes `ab/`), each group by path
    length; then alphabetically, where Obsidian keeps the order it loaded the files in."""
    spelled = path in (target, f"{target}.md")
    return (path not in exact, not spelled, not fold(path).startswith(folder), len(path), fold(path), path)
