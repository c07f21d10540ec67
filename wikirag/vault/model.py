"""A vault on disk: the scan, defensive reading of one note, and the in-memory `Vault` model.

Paths are vault-relative POSIX strings in Unicode NFC (macOS writes names in NFD; links are typed NFC).
Reading never raises for bad content: every problem is one `ReadIssue` per file and the run goes on.
"""

from __future__ import annotations

import gc
import hashlib
import os
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikirag.errors import VaultNotFound
from wikirag.markdown.parse import normalize_text, parse_note
from wikirag.models import ParsedNote, ReadIssue, Resolution, WikiLink
from wikirag.vault.ignore import IgnoreRules
from wikirag.vault.links import LinkIndex, is_note, link_name_key, name_keys

BINARY_CONTROL_SHARE = 0.05  # more control bytes than this (tab, newlines, form feed aside) = not text
_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 12, 13)) + b"\x7f"
MAX_NOTE_BYTES = 5 * 1024 * 1024  # larger .md files are skipped (pasted logs, exports)
LONG_LINE = 10_000  # characters; reported, kept
BINARY_SAMPLE = 8192  # bytes looked at to decide "binary"
BINARY_NUL_SHARE = 0.01  # more NULs than this share of the sample, and at least
BINARY_MIN_NULS = 8  # this many: binary, skipped (a stray NUL or two is removed and reported instead)


@dataclass
class NoteFile:
    path: str  # vault-relative POSIX, NFC
    abs_path: Path  # where it is on disk (the name as the file system spells it)
    size: int
    mtime_ns: int


@dataclass
class ScanResult:
    notes: list[NoteFile] = field(default_factory=list)
    attachments: list[str] = field(default_factory=list)
    issues: list[ReadIssue] = field(default_factory=list)


@dataclass
class ReadResult:
    text: str | None  # None when the file was skipped
    digest: str  # sha256 hex of the raw bytes ("" when they could not be read)
    issues: list[ReadIssue] = field(default_factory=list)


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


# -- scan -------------------------------------------------------------------------------------------------


def scan_vault(root: Path, exclude: Sequence[str] = ()) -> ScanResult:
    """List the vault's notes (`.md`, any case) and attachments, sorted by path.

    Skips dot-files and dot-folders, Obsidian's Excluded files and the `exclude` globs (see
    `wikirag.ignore`). Symlinks inside the vault are followed once (cycles guarded, real folders win);
    symlinks that lead outside it are not followed and are reported.
    """
    root = Path(root)
    if not root.is_dir():
        raise VaultNotFound(f"vault folder not found: {root}")
    rules, issues = IgnoreRules.for_vault(root, exclude)
    result = _scan(root, rules)
    result.issues[:0] = issues
    return result


def _scan(root: Path, rules: IgnoreRules) -> ScanResult:
    out = ScanResult()
    real_root = os.path.realpath(root)
    seen_dirs: set[tuple[int, int]] = set()
    seen_paths: dict[str, str] = {}  # NFC path -> first on-disk spelling
    stack: list[tuple[str, str]] = [(str(root), "")]
    linked_dirs: list[tuple[str, str]] = []  # symlinked folders, walked after every real one
    try:
        st = os.stat(root)
        seen_dirs.add((st.st_dev, st.st_ino))
    except OSError:
        pass
    while stack or linked_dirs:
        if not stack:
            linked_dirs.sort(key=lambda d: d[1])
            stack.append(linked_dirs.pop(0))
        dir_abs, dir_rel = stack.pop()
        if dir_rel:
            try:
                st = os.stat(dir_abs)
            except OSError as exc:
                out.issues.append(ReadIssue(dir_rel, f"cannot open folder ({_why(exc)}); skipped", True))
                continue
            if (st.st_dev, st.st_ino) in seen_dirs:
                continue  # a symlink back to a folder already walked: the loop guard
            seen_dirs.add((st.st_dev, st.st_ino))
        try:
            with os.scandir(dir_abs) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            out.issues.append(ReadIssue(dir_rel or ".", f"cannot list folder ({_why(exc)}); skipped", True))
            continue
        subdirs: list[tuple[str, str]] = []
        for entry in entries:
            name = entry.name
            if name.startswith("."):
                continue
            disk_rel = f"{dir_rel}/{name}" if dir_rel else name
            rel = nfc(disk_rel)
            if _undecodable(rel):
                shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                out.issues.append(ReadIssue(shown, "file name is not valid UTF-8 text; skipped", True))
                continue
            try:
                link = entry.is_symlink()
                if link and not _inside(os.path.realpath(entry.path), real_root):
                    out.issues.append(ReadIssue(rel, "symlink leads outside the vault; not followed", True))
                    continue
                is_dir = entry.is_dir()
                is_file = not is_dir and entry.is_file()
            except OSError as exc:
                out.issues.append(ReadIssue(rel, f"cannot read ({_why(exc)}); skipped", True))
                continue
            if is_dir:
                if not rules.folder_ignored(rel):
                    (linked_dirs if link else subdirs).append((entry.path, rel))
                continue
            if not is_file:
                if link:
                    out.issues.append(ReadIssue(rel, "broken symlink; skipped", True))
                continue
            if rules.file_ignored(rel):
                continue
            if rel in seen_paths:
                first = seen_paths[rel]
                out.issues.append(
                    ReadIssue(rel, f"same name as {first!r} after Unicode normalisation (NFC); skipped", True)
                )
                continue
            seen_paths[rel] = disk_rel
            if is_note(name):
                try:
                    st = entry.stat()
                except OSError as exc:
                    out.issues.append(ReadIssue(rel, f"cannot read ({_why(exc)}); skipped", True))
                    continue
                out.notes.append(NoteFile(rel, Path(entry.path), st.st_size, st.st_mtime_ns))
            else:
                out.attachments.append(rel)
        stack.extend(reversed(subdirs))  # walk folders in name order
    out.notes.sort(key=lambda n: n.path)
    out.attachments.sort()
    return out


def _inside(real: str, real_root: str) -> bool:
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def _undecodable(name: str) -> bool:
    """Names that were not UTF-8 on disk arrive with lone surrogates; they cannot be printed or linked."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


# -- read -------------------------------------------------------------------------------------------------


def read_note(abs_path: Path, rel: str, max_bytes: int = MAX_NOTE_BYTES) -> ReadResult:
    """Read one note as Obsidian would show it; problems become one ReadIssue, never an exception.

    UTF-8 (a BOM is dropped), line ends normalised to "\\n". NUL bytes are removed and invalid UTF-8 is
    replaced (U+FFFD), both reported. Skipped, with `skipped=True`: files over `max_bytes`, UTF-16 files,
    files that look binary (8 or more NULs, over 1% of the first 8 KiB; or over 5% control bytes there)
    and files that cannot be read.
    """
    try:
        data = _read_bytes(abs_path, max_bytes)
    except _TooLarge as exc:
        return _skipped(rel, f"larger than {_size(max_bytes)} ({_size(exc.size)}); skipped")
    except FileNotFoundError:
        return _skipped(rel, "vanished before it could be read; skipped")
    except OSError as exc:
        return _skipped(rel, f"cannot read ({_why(exc)}); skipped")
    digest = hashlib.sha256(data).hexdigest()
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return _skipped(rel, "UTF-16 text (only UTF-8 is read); skipped", digest)
    sample_nuls = data.count(0, 0, BINARY_SAMPLE)
    if sample_nuls >= BINARY_MIN_NULS and sample_nuls > BINARY_NUL_SHARE * min(len(data), BINARY_SAMPLE):
        return _skipped(rel, f"looks binary ({sample_nuls} NUL bytes in the first 8 KiB); skipped", digest)
    sample = data[:BINARY_SAMPLE]
    controls = len(sample) - len(sample.translate(None, _CONTROL_BYTES))
    if len(sample) >= 64 and controls > BINARY_CONTROL_SHARE * len(sample):
        # Text, even in the wrong encoding, has almost no control bytes; random or packed data ~11%.
        return _skipped(rel, f"looks binary ({controls:,} control bytes in the first 8 KiB); skipped", digest)

    problems: list[str] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", "replace")
        bad = text.count("\ufffd") - data.count("\ufffd".encode())
        problems.append(f"{_n(bad, 'invalid UTF-8 sequence')} replaced (first at byte {exc.start})")
    nuls = data.count(0)
    if nuls:
        text = text.replace("\0", "")
        problems.insert(0, f"{_n(nuls, 'NUL byte')} removed")
    text = normalize_text(text)
    if len(text) > LONG_LINE:
        longest = max(map(len, text.split("\n")))
        if longest > LONG_LINE:
            problems.append(f"a line of {longest:,} characters (over {LONG_LINE:,}), kept")
    return ReadResult(text, digest, [ReadIssue(rel, "; ".join(problems))] if problems else [])


class _TooLarge(Exception):
    def __init__(self, size: int) -> None:
        self.size = size


def _read_bytes(path: Path, max_bytes: int) -> bytes:
    """The file's bytes; _TooLarge past `max_bytes`. Raw os calls: no buffered file object."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        size = os.fstat(fd).st_size
        if size > max_bytes:
            raise _TooLarge(size)
        data = os.read(fd, size + 1)  # a short read on a regular file means end of file
        if len(data) > size:  # it grew since fstat: read on, up to the limit
            chunks, total = [data], len(data)
            while total <= max_bytes and (chunk := os.read(fd, 65536)):
                chunks.append(chunk)
                total += len(chunk)
            if total > max_bytes:
                raise _TooLarge(total)
            data = b"".join(chunks)
    finally:
        os.close(fd)
    return data


def _skipped(rel: str, message: str, digest: str = "") -> ReadResult:
    return ReadResult(None, digest, [ReadIssue(rel, message, skipped=True)])


def _size(size: int) -> str:
    return f"{size / 1024 / 1024:.1f} MiB" if size >= 1024 * 1024 else f"{size:,} bytes"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


# -- the model --------------------------------------------------------------------------------------------


class Vault:
    """The vault in memory: parsed notes, attachments, resolved links and backlinks.

    Built once by `Vault.load`; `update_file` / `remove_file` change one file and re-resolve only the
    links whose target names that file (found through a name -> linking notes index), never the vault.
    """

    def __init__(self, root: Path, rules: IgnoreRules | None = None, max_bytes: int = MAX_NOTE_BYTES) -> None:
        self.root = Path(root)
        self.notes: dict[str, ParsedNote] = {}
        self.digests: dict[str, str] = {}
        self.attachments: set[str] = set()
        self.issues: list[ReadIssue] = []
        self.max_bytes = max_bytes
        self._rules = rules or IgnoreRules()
        self._real_root = os.path.realpath(self.root)
        self._abs: dict[str, Path] = {}
        self._index = LinkIndex()
        self._outgoing: dict[str, list[tuple[WikiLink, Resolution]]] = {}
        self._targets: dict[str, set[str]] = {}  # note -> files its links resolve to (itself excluded)
        self._backlinks: dict[str, set[str]] = {}  # file -> notes linking to it
        self._names: dict[str, set[str]] = {}  # note -> folded target names of its links
        self._waiting: dict[str, set[str]] = {}  # folded target name -> notes with a link by that name

    @classmethod
    def load(cls, root: Path, exclude: Sequence[str] = (), *, max_bytes: int = MAX_NOTE_BYTES,
             parsed: Mapping[str, tuple[str, ParsedNote]] | None = None) -> Vault:
        """Scan, read, parse and resolve a whole vault. Raises VaultNotFound when `root` is no folder.

        `parsed` maps a path to (digest, ParsedNote) from an earlier run: a note whose bytes still have
        that digest is not parsed again (parse_note is pure, so the result would be the same)."""
        root = Path(root)
        if not root.is_dir():
            raise VaultNotFound(f"vault folder not found: {root}")
        rules, issues = IgnoreRules.for_vault(root, exclude)
        vault = cls(root, rules, max_bytes)
        with _cyclic_gc_paused():
            scan = _scan(root, rules)
            vault.issues = issues + scan.issues
            for note in scan.notes:
                read = read_note(note.abs_path, note.path, max_bytes)
                vault.issues.extend(read.issues)
                if read.text is not None:
                    known = parsed.get(note.path) if parsed else None
                    hit = known is not None and known[0] == read.digest
                    vault.notes[note.path] = known[1] if hit else parse_note(read.text, note.path)
                    vault.digests[note.path] = read.digest
                    vault._abs[note.path] = note.abs_path
            vault.attachments = set(scan.attachments)
            for path in (*vault.notes, *scan.attachments):
                vault._index.add(path)
            for path in vault.notes:
                vault._link(path)
        return vault

    # -- queries ----------------------------------------------------------------------------------------
    def resolve(self, from_path: str, link: WikiLink) -> Resolution:
        return self._index.resolve(link, from_path)

    def abs_path(self, path: str) -> Path:
        """Where a note lives on disk (its own spelling there, e.g. NFD on macOS)."""
        return self._abs.get(path) or self.root / path

    def outgoing(self, path: str) -> list[tuple[WikiLink, Resolution]]:
        """The note's links in document order (frontmatter first), each with its resolution."""
        return list(self._outgoing.get(path, ()))

    def backlinks(self, path: str) -> set[str]:
        """Notes with a link that resolves to `path` (a note linking to itself is not counted)."""
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
        return self._index.duplicate_names()

    # -- changes ----------------------------------------------------------------------------------------
    def update_file(self, rel: str) -> list[ReadIssue]:
        """Re-read one note, or register one attachment, after it was created or changed on disk.

        Returns the file's read issues (they also replace its earlier ones in `issues`). A path that is
        excluded, gone, or outside the vault through a symlink is removed from the model instead.
        """
        disk_rel = rel.replace(os.sep, "/").strip("/")
        path = nfc(disk_rel)
        abs_path = self._abs.get(path) or self.root / disk_rel
        if self._rules.ignored(path) or not abs_path.is_file() or not self._within_vault(abs_path):
            self.remove_file(path)
            return []
        self.issues = [i for i in self.issues if i.path != path]
        if not is_note(path):
            if path not in self.attachments:
                self.attachments.add(path)
                self._added(path)
            return []
        read = read_note(abs_path, path, self.max_bytes)
        self.issues.extend(read.issues)
        if read.text is None:
            if path in self.notes:
                self._forget(path)
            return read.issues
        if self.digests.get(path) == read.digest:
            return read.issues
        is_new = path not in self.notes
        self.notes[path] = parse_note(read.text, path)
        self.digests[path] = read.digest
        self._abs[path] = abs_path
        if is_new:
            self._added(path)
        self._link(path)
        return read.issues

    def remove_file(self, rel: str) -> None:
        """Forget a deleted note or attachment (or every file under a deleted folder)."""
        path = nfc(rel.replace(os.sep, "/").strip("/"))
        if path in self.notes or path in self.attachments:
            gone = [path]
        else:
            prefix = path + "/"
            gone = sorted(p for p in (*self.notes, *self.attachments) if p.startswith(prefix))
        for p in gone:
            self._forget(p)
        self.issues = [i for i in self.issues if i.path != path and not i.path.startswith(path + "/")]

    # -- bookkeeping ------------------------------------------------------------------------------------
    def _within_vault(self, abs_path: Path) -> bool:
        return _inside(os.path.realpath(abs_path), self._real_root)

    def _link(self, source: str) -> None:
        """(Re)resolve one note's links and update backlinks and the name index."""
        self._unlink(source)
        resolve = self._index.resolve
        links = self.notes[source].links
        pairs = [(link, resolve(link, source)) for link in links]
        targets = {res.path for _, res in pairs if res.path and res.status != "self"}
        names = {link_name_key(target) for target in {link.target for link in links} if target}
        self._outgoing[source] = pairs
        self._targets[source], self._names[source] = targets, names
        _add_to(self._backlinks, targets, source)
        _add_to(self._waiting, names, source)

    def _unlink(self, source: str) -> None:
        self._outgoing.pop(source, None)
        for t in self._targets.pop(source, ()):
            _discard(self._backlinks, t, source)
        for name in self._names.pop(source, ()):
            _discard(self._waiting, name, source)

    def _added(self, path: str) -> None:
        self._index.add(path)
        self._relink(path)

    def _forget(self, path: str) -> None:
        if path in self.notes:
            del self.notes[path]
            self.digests.pop(path, None)
            self._abs.pop(path, None)
            self._unlink(path)
        self.attachments.discard(path)
        self._index.remove(path)
        self._relink(path)

    def _relink(self, path: str) -> None:
        """Re-resolve the notes whose links name `path`'s file (it just appeared or went away)."""
        affected: set[str] = set()
        for key in name_keys(path):
            affected |= self._waiting.get(key, set())
        for source in sorted(affected):
            if source in self.notes:
                self._link(source)


@contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """Loading allocates millions of long-lived objects and makes no reference cycles; the cyclic
    collector would rescan the growing heap again and again (a quarter of load time). Pause it."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            # Everything allocated meanwhile sits in the youngest generation, so the first allocation
            # after `enable` would trace all of it (~0.25 s for 10k notes). freeze + unfreeze moves it
            # to the oldest generation in O(1) instead; a full collection still visits it later.
            gc.freeze()
            gc.unfreeze()
            gc.enable()


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


def read_note_files(vault: Any, paths: list[str]) -> dict[str, str]:
    """The note files as a vanilla LightRAG user would insert them (frontmatter included)."""
    out = {}
    root = getattr(vault, "root", None)
    for path in paths:
        where = vault.abs_path(path) if hasattr(vault, "abs_path") else (
            os.path.join(root, path) if root is not None else None)
        try:
            with open(where, encoding="utf-8", errors="replace", newline="") as fh:
                out[path] = normalize_text(fh.read())
        except (OSError, TypeError):
            out[path] = vault.notes[path].body
    return out
