"""The Vault: every readable note parsed, with Obsidian's link resolution, backlinks and unresolved
targets, kept current file by file (`update_file`, `remove_file`) for `watch`.
"""

from __future__ import annotations

import hashlib
import os
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from wikirag.errors import VaultNotFound
from wikirag.markdown.parse import parse_note
from wikirag.models import ParsedNote, ReadIssue, Resolution, WikiLink
from wikirag.vault import read as vault_read
from wikirag.vault.ignore import IgnoreRules
from wikirag.vault.links import LinkIndex, is_note, link_name_key, name_keys, wanted_name
from wikirag.vault.memory import cyclic_gc_paused
from wikirag.vault.on_disk import Listings, find_on_disk, inside_folder, nfc
from wikirag.vault.read import MAX_NOTE_BYTES, NOT_REGULAR, ScanResult, lies_in, read_note, scan_files, special_file
from wikirag.vault.symlinks import Symlinks


class RestoredLinks(Sequence):
    """A note's (link, Resolution) pairs restored from a row an earlier run saved (index.derived), made from
    the note's links when first read: a run that does not re-derive the note never decodes its links (a note
    from the parse cache decodes them on first read, index.parsecache.CachedNote). `unresolved_names` are
    the entity names of its unresolved links as saved with the row (what planning reads of every note).
    `decode` gives the saved Resolutions; if they are unusable or do not match the links one for one, each
    link is resolved again with `resolve` (Vault.load binds it)."""

    __slots__ = ("_note", "_decode", "_pairs", "resolve", "unresolved_names")

    def __init__(self, note: ParsedNote, decode: Any, unresolved_names: list[str]) -> None:
        self._note, self._decode, self.unresolved_names = note, decode, unresolved_names
        self._pairs: list[tuple[WikiLink, Resolution]] | None = None
        self.resolve: Any = None

    def _built(self) -> list[tuple[WikiLink, Resolution]]:
        if self._pairs is None:
            links = self._note.links
            resolutions = self._decode()
            if resolutions is None or len(resolutions) != len(links):
                resolutions = [self.resolve(link) for link in links]
            self._pairs = list(zip(links, resolutions, strict=True))
        return self._pairs

    def __iter__(self) -> Iterator[tuple[WikiLink, Resolution]]:
        return iter(self._built())

    def __len__(self) -> int:
        return len(self._built())

    def __getitem__(self, index: Any) -> Any:
        return self._built()[index]


class Vault:
    """The vault in memory: parsed notes, attachments, resolved links and backlinks.

    Built once by `Vault.load`; `update_file` / `remove_file` change one file and re-resolve only the
    links whose target names that file (found through a name -> linking notes index), never the vault.
    The name index and the backlink bookkeeping are built on first use: `wikirag index` restores most
    notes' resolutions (`Vault.load`'s `restore`) and never asks for either.
    """

    def __init__(self, root: Path, rules: IgnoreRules | None = None, max_bytes: int = MAX_NOTE_BYTES) -> None:
        self.root = Path(root)
        self.notes: dict[str, ParsedNote] = {}
        self.digests: dict[str, str] = {}
        self.attachments: set[str] = set()
        self.issues: list[ReadIssue] = []
        self.max_bytes = max_bytes
        self.rules = rules or IgnoreRules()
        self._real_root = os.path.realpath(self.root)
        self._abs: dict[str, str] = {}  # note -> its path on disk, where that differs from root / note (NFD)
        self.stats: dict[str, tuple[int, int]] = {}  # note -> (size, mtime_ns) as scanned by `load`
        self.clean: set[str] = set()  # notes read without a problem by `load` (or taken from `trusted`)
        self.unreadable: list[str] = []  # folders and notes `load`'s scan could not read: kept, not gone
        self.symlinks = Symlinks()  # those `load`'s scan met (`watch` maps events on their targets back to them)
        self.touched: set[str] = set()  # notes parsed, relinked or removed since the last `take_touched()`
        self.paths_digest = ""  # of the note and attachment paths links resolve among (`load`)
        self._index: LinkIndex | None = None  # built on first use (`_links`)
        self._book = False  # whether the four tables below are built (`_ensure_book`)
        self._outgoing: dict[str, list[tuple[WikiLink, Resolution]] | RestoredLinks] = {}
        self._targets: dict[str, set[str]] = {}  # note -> files its links resolve to (itself excluded)
        self._backlinks: dict[str, set[str]] = {}  # file -> notes linking to it
        self._names: dict[str, set[str]] = {}  # note -> folded target names of its links
        self._waiting: dict[str, set[str]] = {}  # folded target name -> notes with a link by that name

    @classmethod
    def load(cls, root: Path, exclude: Sequence[str] = (), *, max_bytes: int = MAX_NOTE_BYTES,
             parsed: Mapping[str, tuple[str, ParsedNote]] | None = None, templates: bool = False,
             trusted: Mapping[str, tuple[int, int]] | None = None, scan: ScanResult | None = None,
             texts: dict[str, str] | None = None, restore: Any = None, store: Path | None = None) -> Vault:
        """Scan, read, parse and resolve a whole vault. Raises VaultNotFound when `root` is no folder.

        `parsed` maps a path to (digest, ParsedNote) from an earlier run: a note whose bytes still have
        that digest is not parsed again (parse_note is pure, so the result would be the same). A note whose
        (size, mtime_ns) equals its `trusted` entry is not even read: the `parsed` digest stands (the caller
        vouches that the stat data is not racy). `scan` is a `scan_vault` result of the same folder and
        `exclude`, to walk the vault once. `texts`, when given, receives the text of each note read without
        problems (cost-estimate prices stock LightRAG on the files as read, without reading them again).
        `store` is wikirag's store folder, `templates` whether the template folders are read (scan_vault).
        `restore` (index.derived) offers resolutions saved by an earlier run: when its `paths_digest` equals
        this vault's, `restore.outgoing(path, digest, note)` gives a note's (link, Resolution) pairs or None,
        and a note it gives them for is not resolved again (nor `touched`): a link's resolution depends only
        on its text, its note's path and the set of paths."""
        root = Path(root)
        VaultNotFound.unless_folder(root)
        rules, issues = IgnoreRules.for_vault(root, exclude, store, templates)
        vault = cls(root, rules, max_bytes)
        trusted = trusted or {}
        with cyclic_gc_paused():
            if scan is None:
                scan = scan_files(root, rules)
                vault.issues = issues + scan.issues
            else:
                vault.issues = list(scan.issues)  # scan_vault already put the ignore-rule issues first
            for note in scan.notes:
                stat = (note.size, note.mtime_ns)
                vault.stats[note.path] = stat
                known = parsed.get(note.path) if parsed else None
                if known is not None and trusted.get(note.path) == stat:
                    vault.notes[note.path], vault.digests[note.path] = known[1], known[0]
                    vault._abs[note.path] = note.disk_path
                    vault.clean.add(note.path)
                    continue
                read = read_note(note.abs_path, note.path, max_bytes)
                vault.issues.extend(read.issues)
                if read.unreadable and known is not None:  # there but unreadable now: kept as last indexed
                    vault.notes[note.path], vault.digests[note.path] = known[1], known[0]
                    vault._abs[note.path] = note.disk_path
                    continue
                if not read.issues:
                    vault.clean.add(note.path)
                    if texts is not None and read.text is not None:
                        texts[note.path] = read.text
                if read.text is not None:
                    hit = known is not None and known[0] == read.digest
                    vault.notes[note.path] = known[1] if hit else parse_note(read.text, note.path)
                    vault.digests[note.path] = read.digest
                    vault._abs[note.path] = note.disk_path
            vault.unreadable = list(scan.unreadable)
            vault.symlinks = scan.symlinks
            if scan.unreadable and parsed:  # notes in folders that could not be listed are not gone
                for path, (digest, note) in parsed.items():
                    if path not in vault.notes and lies_in(path, scan.unreadable):
                        vault.notes[path], vault.digests[path] = note, digest
                        vault._abs[path] = str(root / path)
                vault.notes = dict(sorted(vault.notes.items()))
            vault.attachments = set(scan.attachments)
            vault.paths_digest = paths_digest(vault.notes, vault.attachments)
            if restore is not None and restore.paths_digest != vault.paths_digest:
                restore = None
            pending = []
            for path, note in vault.notes.items():
                pairs = restore.outgoing(path, vault.digests[path], note) if restore is not None else None
                if pairs is None:
                    pending.append(path)
                else:
                    if isinstance(pairs, RestoredLinks):  # a weak reference: no Vault <-> note cycle to collect
                        pairs.resolve = partial(_resolve_in, weakref.ref(vault), path)
                    vault._outgoing[path] = pairs
            index = vault._index_for(pending) if restore is not None and len(pending) * 2 < len(vault.notes) else None
            for path in pending:
                vault._link(path, index)
            vault._outgoing = {path: vault._outgoing[path] for path in vault.notes}  # in the notes' order
        return vault

    # -- queries ----------------------------------------------------------------------------------------
    def resolve(self, from_path: str, link: WikiLink) -> Resolution:
        return self._links().resolve(link, from_path)

    def abs_path(self, path: str) -> Path:
        """Where a note lives on disk (its own spelling there, e.g. NFD on macOS)."""
        disk = self._abs.get(path)
        return Path(disk) if disk else self.root / path

    def outgoing(self, path: str) -> list[tuple[WikiLink, Resolution]]:
        """The note's links in document order (frontmatter first), each with its resolution."""
        return list(self._outgoing.get(path, ()))

    def restored_unresolved_names(self, path: str) -> list[str] | None:
        """The entity names of the note's unresolved links as an earlier run saved them, while its resolutions
        are the restored ones (RestoredLinks); None otherwise (read them from `outgoing`)."""
        pairs = self._outgoing.get(path)
        return pairs.unresolved_names if isinstance(pairs, RestoredLinks) else None

    def backlinks(self, path: str) -> set[str]:
        """Notes with a link that resolves to `path` (a note linking to itself is not counted)."""
        self._ensure_book()
        return set(self._backlinks.get(path, ()))

    def unresolved(self) -> dict[str, set[str]]:
        """Link target, as written, -> the notes holding an unresolved link to it."""
        out: dict[str, set[str]] = {}
        for source, pairs in self._outgoing.items():
            for link, res in pairs:
                if res.status == "unresolved":
                    out.setdefault(link.target, set()).add(source)
        return out

    def duplicate_names(self) -> list[list[str]]:
        """Groups of notes that share a name (so bare links to that name need the tie-break)."""
        return self._links().duplicate_names()

    # -- changes ----------------------------------------------------------------------------------------
    def update_file(self, rel: str, listings: Listings | None = None) -> list[ReadIssue]:
        """Re-read one note, or register one attachment, after it was created, changed or removed on disk.

        Returns the file's read issues (they also replace its earlier ones in `issues`). A path that is
        excluded, gone, or outside the vault through a symlink is removed from the model instead. Of two
        spellings of a name, the one the scan keeps is read (`find_on_disk`, which `listings` speeds up).
        """
        self._ensure_book()
        disk_rel = rel.replace(os.sep, "/").strip("/")
        path = nfc(disk_rel)
        disk = find_on_disk(self.root, path, listings)
        abs_path = Path(disk) if disk else self.root / disk_rel
        if (refused := vault_read.path_refused(path)) and not self.rules.ignored(path):  # as the scan says
            self.remove_file(path)
            self.issues.append(refused)
            return [refused]
        if self.rules.ignored(path) or not abs_path.is_file() or not self._within_vault(abs_path):
            if path in self.notes or path in self.attachments or self.rules.ignored(path):
                self.remove_file(path)
            else:
                self._recheck_folder(path, listings)
            special = is_note(path) and not self.rules.ignored(path) and special_file(abs_path)  # as the scan says
            self.issues += [ReadIssue(path, NOT_REGULAR, True)] if special else []
            return self.issues[-1:] if special else []
        self.issues = [i for i in self.issues if i.path != path]
        if not is_note(path):
            if path not in self.attachments:
                self.attachments.add(path)
                self._added(path)
            return []
        read = read_note(abs_path, path, self.max_bytes)
        self.issues.extend(read.issues)
        if read.text is None:
            if path in self.notes and not read.unreadable:  # an unreadable note is kept as last indexed
                self._forget(path)
            return read.issues
        self._abs[path] = str(abs_path)  # another spelling may hold the same text
        if self.digests.get(path) == read.digest:
            return read.issues
        is_new = path not in self.notes
        self.notes[path] = parse_note(read.text, path)
        self.digests[path] = read.digest
        if is_new:
            self._added(path)
        self._link(path)
        return read.issues

    def remove_file(self, rel: str) -> None:
        """Forget a deleted note or attachment (or every file under a deleted folder)."""
        self._ensure_book()
        path = nfc(rel.replace(os.sep, "/").strip("/"))
        if path in self.notes or path in self.attachments:
            gone = [path]
        else:
            prefix = path + "/"
            gone = sorted(p for p in (*self.notes, *self.attachments) if p.startswith(prefix))
        for p in gone:
            self._forget(p)
        self.issues = [i for i in self.issues if i.path != path and not i.path.startswith(path + "/")]

    def _recheck_folder(self, path: str, listings: Listings | None) -> None:
        """A folder was removed, moved away or changed: each file the model holds under it is read again or
        forgotten, rather than all forgotten, since another spelling of the folder (Café in NFC and in NFD
        are two folders whose notes share their NFC paths) may still hold some of them."""
        prefix = path + "/"
        for held in sorted(p for p in (*self.notes, *self.attachments) if p.startswith(prefix)):
            self.update_file(held, listings)
        self.issues = [i for i in self.issues if i.path != path and not (
            i.path.startswith(prefix) and find_on_disk(self.root, i.path, listings) is None)]

    def prepare_updates(self) -> None:
        """Build now what the first `update_file` / `remove_file` would build (backlinks and the name index over
        every note): a watcher calls this while idle, so its first save costs what later ones do."""
        self._ensure_book()

    def take_touched(self) -> set[str]:
        """The notes whose parse or link resolutions changed (or that went away) since the last call:
        what an incremental planner must look at again."""
        touched, self.touched = self.touched, set()
        return touched

    # -- bookkeeping ------------------------------------------------------------------------------------
    def _within_vault(self, abs_path: Path) -> bool:
        return inside_folder(os.path.realpath(abs_path), self._real_root)

    def _links(self) -> LinkIndex:
        """The name and path index of the vault's files, built on first use."""
        if self._index is None:
            self._index = LinkIndex((*self.notes, *self.attachments))
        return self._index

    def _index_for(self, sources: list[str]) -> LinkIndex:
        """An index of only the files the links of `sources` could resolve to (`wanted_name`): a run that
        re-resolves a few notes does not file every path of the vault. Not kept: it answers for those links only."""
        names = {name for source in sources for link in self.notes[source].links
                 if (name := wanted_name(link, source)) is not None}
        return LinkIndex((*self.notes, *self.attachments), names=names)

    def _ensure_book(self) -> None:
        """Build backlinks and the name -> linking notes index from the resolutions (what `watch` needs to
        re-resolve only the notes a changed file concerns), once."""
        if self._book:
            return
        self._links()
        self._book = True
        for source, pairs in self._outgoing.items():
            self._note_book(source, pairs)

    def _note_book(self, source: str, pairs: list[tuple[WikiLink, Resolution]]) -> None:
        targets = {res.path for _, res in pairs if res.path and res.status != "self"}
        names = {link_name_key(target) for target in {link.target for link, _ in pairs} if target}
        self._targets[source], self._names[source] = targets, names
        _add_to(self._backlinks, targets, source)
        _add_to(self._waiting, names, source)

    def _link(self, source: str, index: LinkIndex | None = None) -> None:
        """(Re)resolve one note's links (through `index`, else the vault's) and update backlinks and the name
        index (when built)."""
        self._unlink(source)
        self.touched.add(source)
        resolve = (index or self._links()).resolve
        pairs = [(link, resolve(link, source)) for link in self.notes[source].links]
        self._outgoing[source] = pairs
        if self._book:
            self._note_book(source, pairs)

    def _unlink(self, source: str) -> None:
        self._outgoing.pop(source, None)
        for t in self._targets.pop(source, ()):
            _discard(self._backlinks, t, source)
        for name in self._names.pop(source, ()):
            _discard(self._waiting, name, source)

    def _added(self, path: str) -> None:
        self._links().add(path)
        self._relink(path)

    def _forget(self, path: str) -> None:
        self.touched.add(path)
        if path in self.notes:
            del self.notes[path]
            self.digests.pop(path, None)
            self._abs.pop(path, None)
            self._unlink(path)
        self.attachments.discard(path)
        self._links().remove(path)
        self._relink(path)

    def _relink(self, path: str) -> None:
        """Re-resolve the notes whose links name `path`'s file (it just appeared or went away)."""
        affected: set[str] = set()
        for key in name_keys(path):
            affected |= self._waiting.get(key, set())
        for source in sorted(affected):
            if source in self.notes:
                self._link(source)


def _resolve_in(vault_ref: weakref.ref[Vault], from_path: str, link: WikiLink) -> Resolution:
    vault = vault_ref()
    if vault is None:
        raise ReferenceError("the vault these links belong to is gone")
    return vault.resolve(from_path, link)


def paths_digest(notes: Iterable[str], attachments: Iterable[str]) -> str:
    """A digest of the set of note and attachment paths: what every link resolution depends on besides the
    link and its note's path."""
    text = "\n".join(sorted(notes)) + "\n\0\n" + "\n".join(sorted(attachments))
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


def _add_to(table: dict[str, set[str]], keys: set[str], value: str) -> None:
    """Add `value` to each key's bucket (no throwaway `set()` per call, as `setdefault` would make)."""
    for key in keys:
        bucket = table.get(key)
        if bucket is None:
            table[key] = {value}
        else:
            bucket.add(value)


def _discard(table: dict[str, set[str]], key: str, value: str) -> None:
    bucket = table.get(key)
    if bucket is not None:
        bucket.discard(value)
        if not bucket:
            del table[key]

