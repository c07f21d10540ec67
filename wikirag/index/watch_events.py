"""What the vault's file events touch: the paths a `watch` batch re-reads, the watcher's event collector, and
bringing the in-memory vault up to date for those paths (`apply_paths`). `watch.py` runs the loop around them.
"""

from __future__ import annotations

import bisect
import os
import stat
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEventHandler

from wikirag.vault.ignore import APP_JSON, TEMPLATE_SETTINGS, IgnoreRules, dropping
from wikirag.vault.model import Vault
from wikirag.vault.on_disk import Listings, nfc, walk_folders
from wikirag.vault.read import read_note, scan_files
from wikirag.vault.symlinks import Symlinks


def ignored_path(rel: str) -> bool:
    """True for paths the watcher never looks at (dot-folders like .obsidian and the store, editor droppings:
    the scan leaves them out too)."""
    parts = rel.replace(os.sep, "/").split("/")
    return any(p.startswith(".") for p in parts if p) or dropping(parts[-1])


class EventCollector(FileSystemEventHandler):
    """Receives watchdog events on its thread; the watch loop drains them on its own.

    An event names the real path that changed, so a note the scan reads through a symlink (Shortcut.md ->
    real/Target.md, Shelf -> .shelf) changes under its target's path: the events' real paths are kept, and
    the loop maps them to vault paths through the symlinks of the vault it holds (`touched`)."""

    def __init__(self, root: Path, store: Path) -> None:
        super().__init__()
        self.root = str(root.resolve())
        self.store = str(store.resolve())
        self._lock = threading.Lock()
        self._reals: set[str] = set()  # real paths of the events that touch the vault, since the last drain
        self.last_event = 0.0
        self.root_lost = False  # the vault folder itself was deleted or moved away: its watches are gone
        # A folder that arrives after one left may be the same folder back (out of the vault and straight back:
        # watchdog then drops the watches it shares with the one gone, see `take_rewatch`).
        self._folder_left = False
        self._rewatch = False
        self._symlinks = Symlinks()  # those of the vault the loop holds
        # While the vault is read, events that touch nothing through the symlinks known so far are held: the
        # read may find a link that reads them (the first read finds every link; a read made for a new link).
        self._held: list[str] | None = []
        # Obsidian's Excluded files and template folders: in a dot-folder no note is read from, yet they decide
        # which notes count. Where `.obsidian` is a symlink, its target's events name the target's path
        # (follow_settings). A settings file's folder counts too: `.obsidian` or a plugin's moved in or away.
        self._own = [os.path.join(self.root, *rel.split("/")) for rel in SETTINGS_FILES]
        self._settings = {*self._own, *map(os.path.dirname, self._own)}
        self._settings_touched = False

    def follow_settings(self, folder: str | None) -> None:
        """Take the settings files of `folder`, the target of a symlinked `.obsidian` (settings_folder), as the
        vault's: their events name the target's path."""
        files = [*self._own, *(os.path.join(folder, *rel.split("/")[1:]) for rel in SETTINGS_FILES if folder)]
        self._settings = {*files, *map(os.path.dirname, files)}

    def touched(self, reals: Iterable[str], symlinks: Symlinks) -> tuple[set[str], bool]:
        """The vault paths (as on disk) that events at `reals` touch, their own and those of the links that read
        them; and whether one can change which folders the scan walks through a link (then read the vault whole)."""
        paths: set[str] = set()
        relinked = False
        for real in reals:
            if self._in_store(real):
                continue
            own = real[len(self.root) + 1:].replace(os.sep, "/") if real.startswith(self.root + os.sep) else ""
            paths.update(p for p in (own, *symlinks.vault_paths(real)) if p and not ignored_path(p))
            relinked = relinked or symlinks.relinks(real)
        return paths, relinked

    def dispatch(self, event: Any) -> None:
        kind = getattr(event, "event_type", "")
        # A folder's "modified" only says its listing changed; the children's own events follow.
        if kind in {"opened", "closed_no_write"} or (kind == "modified" and event.is_directory):
            return
        reals = [os.path.normpath(os.fsdecode(raw)) for raw in (event.src_path, getattr(event, "dest_path", ""))
                 if raw]
        if kind in {"deleted", "moved"} and event.is_directory and reals and reals[0] == self.root:
            self.root_lost = True
        if event.is_directory and kind in {"deleted", "created"} and reals and not self._in_store(reals[0]):
            with self._lock:
                if kind == "deleted":
                    self._folder_left = True
                elif self._folder_left and self._matters(reals[0], self._symlinks):
                    self._rewatch = True
        if any(real in self._settings for real in reals):
            with self._lock:
                self._settings_touched = True
                self.last_event = time.monotonic()  # taken once the vault is quiet, as a note's change is
        with self._lock:
            for real in reals:
                if self._matters(real, self._symlinks):
                    self._reals.add(real)
                    self.last_event = time.monotonic()
                elif self._held is not None:
                    self._held.append(real)

    def _in_store(self, real: str) -> bool:
        return real == self.store or real.startswith(self.store + os.sep)

    def _matters(self, real: str, symlinks: Symlinks) -> bool:
        paths, relinked = self.touched([real], symlinks)
        return bool(paths) or relinked

    def reading(self) -> None:
        """The loop starts reading the whole vault."""
        with self._lock:
            self._held = []

    def follow(self, symlinks: Symlinks) -> None:
        """The loop read the vault whole and holds these symlinks now: events held during the read that touch
        the vault through them are taken."""
        with self._lock:
            self._symlinks = symlinks
            held, self._held = self._held or [], None
            for real in held:
                if self._matters(real, symlinks):
                    self._reals.add(real)
                    self.last_event = time.monotonic()

    def drain_if_quiet(self, quiet_seconds: float) -> set[str] | None:
        """The real paths of the events since the last drain, once none came for `quiet_seconds` (0: at once, for
        an `index` handed to the watch)."""
        with self._lock:
            if not self._reals or time.monotonic() - self.last_event < quiet_seconds:
                return None
            reals, self._reals = self._reals, set()
            return reals

    def take_settings_touched(self, quiet_seconds: float) -> bool:
        """Whether `.obsidian/app.json` or a template plugin's settings (or their folders) changed since the last
        call, once no event came for `quiet_seconds`: a `git checkout` removes them and writes them back among its
        notes, and a vault read whole in between would index the Excluded files' notes, to remove them again at
        the next batch."""
        with self._lock:
            if not self._settings_touched or time.monotonic() - self.last_event < quiet_seconds:
                return False
            self._settings_touched = False
            return True

    def take_rewatch(self) -> bool:
        """Whether the vault's watches must be made again (once per call): a folder arrived after a folder left.

        Watchdog's inotify emitter (7.1.1) holds a folder moved out of the vault until it knows no move back in
        pairs with it (0.5 s); if the same folder came back in meanwhile under another name (a restore from the
        trash), the watch it added for the arrival is the old one (same inode, same watch descriptor), and it
        drops it with the move out: no event would come from the folder again, nor from its subfolders. Which
        folder left is gone from disk by then, so any arrival after a departure counts (a few extra rewatches).
        The arrival's own event is taken with or after this, so the batch reading it reads after the rewatch."""
        with self._lock:
            rewatch, self._rewatch = self._rewatch, False
            if rewatch:
                self._folder_left = False
            return rewatch

    def pending(self) -> int:
        with self._lock:
            return len(self._reals)


# The files in `.obsidian` that decide which notes count (vault/ignore.py)
SETTINGS_FILES = (APP_JSON, *(rel for rel, _key in TEMPLATE_SETTINGS))


def settings_folder(root: Path) -> str | None:
    """The real folder of the vault's `.obsidian` where it is a symlink to a folder outside the vault: the
    vault's recursive watch does not follow the link, so `watch` watches that folder too (not its subfolders but
    Templater's) for edits of SETTINGS_FILES. None where `.obsidian` is a folder of the vault's own, or no folder."""
    link = root / APP_JSON.split("/")[0]
    if not link.is_symlink() or not link.is_dir():
        return None
    real, vault = os.path.realpath(link), os.path.realpath(root)
    return None if real == vault or real.startswith(vault + os.sep) else real


def folder_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the folder, or None when there is none: a vault removed and made again is another."""
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISDIR(info.st_mode) else None


def apply_paths(vault: Vault, paths: set[str], reread: set[str] | None = None) -> bool:
    """Bring the in-memory vault up to date for the touched paths, reading the disk as it is now. True, with
    the vault partly updated, when the paths make, remove or hold a symlink: which folders the scan walks
    through links, and under which path, depends on the whole vault (real folders first, each folder once),
    so the caller reads it whole. The files' stat data becomes the vault's (`stats`, `clean`: what the parse
    cache may trust), and the vault paths of the files looked at are added to `reread`."""
    reread = set() if reread is None else reread
    if any(vault.symlinks.touches(rel) or os.path.islink(vault.root / rel) for rel in paths):
        return True
    listings: Listings = {}  # the folders listed to find names spelled past ASCII, once a batch
    # A folder moved in brings an event for each folder and file in it: each is read once, with the topmost.
    walked: list[str] = []  # the folders walked, each with a slash after it
    updated: set[str] = set()  # the files their walks brought up to date
    held: list[str] = []  # the files the vault holds, sorted (listed once, after the first walk)
    for rel in sorted(paths):
        abs_path = vault.root / rel
        if abs_path.is_dir():
            if nfc(rel) in vault.notes or nfc(rel) in vault.attachments:  # a file replaced by a folder of its
                _update_file(vault, rel, listings, reread)  # name (X.md -> X.md/): its one event is the folder's
            if any(rel.startswith(folder) for folder in walked):
                continue
            walked.append(rel + "/")
            found: set[str] = set()  # the files this walk found, in NFC as the vault holds them
            for dirpath, dirnames, filenames in walk_folders(abs_path):
                dirnames[:] = [d for d in dirnames if not d.startswith(".")]
                filenames = [f for f in filenames if not f.startswith(".")]
                if any(os.path.islink(os.path.join(dirpath, name)) for name in (*dirnames, *filenames)):
                    return True
                for name in filenames:
                    child = (Path(dirpath) / name).relative_to(vault.root).as_posix()
                    if not ignored_path(child):
                        _update_file(vault, child, listings, reread)
                        updated.add(child)
                        found.add(nfc(child))
            # Files held under it that the walk did not find: a folder moved away and another made in its place
            # names only the folder when the move's events for its files were lost (watchdog lists them by
            # walking the destination, gone too when it moved on at once).
            held = held or sorted((*vault.notes, *vault.attachments))
            prefix = nfc(rel) + "/"
            for path in held[bisect.bisect_left(held, prefix):]:
                if not path.startswith(prefix):
                    break
                if path not in found:
                    _update_file(vault, path, listings, reread)
                    updated.add(path)
        elif rel not in updated:  # also a file gone, or every file under a removed/moved-away folder: another
            _update_file(vault, rel, listings, reread)  # spelling may remain
    return False


def _update_file(vault: Vault, rel: str, listings: Listings, reread: set[str]) -> None:
    """`vault.update_file`, with the file's stat data taken before it is read: a change after the stat makes
    another, so a parse-cache row of these figures is never trusted for bytes it does not hold."""
    path = nfc(rel.replace(os.sep, "/").strip("/"))
    try:
        info: os.stat_result | None = os.stat(vault.root / rel)
    except OSError:
        info = None
    issues = vault.update_file(rel, listings)
    reread.add(path)
    if path in vault.notes and info is not None and not issues:
        vault.stats[path] = (info.st_size, info.st_mtime_ns)
        vault.clean.add(path)
    else:  # gone, unreadable (kept as last indexed) or read with a problem: read again next time
        vault.stats.pop(path, None)
        vault.clean.discard(path)
    if info is None:  # a folder removed or moved away: the notes that were under it
        prefix = path + "/"
        gone = {p for p in vault.stats if p.startswith(prefix) and p not in vault.notes}
        reread.update(gone)
        for p in gone:
            vault.stats.pop(p, None)
            vault.clean.discard(p)


def still_as_read(vault: Vault, path: str) -> bool:
    """Whether a note's file still has the stat data the vault recorded and, read again after that stat, the
    digest it holds."""
    where = vault.abs_path(path)
    try:
        info = os.stat(where)
    except OSError:
        return False
    if (info.st_size, info.st_mtime_ns) != vault.stats.get(path):
        return False
    read = read_note(where, path, vault.max_bytes)
    return not read.issues and read.digest == vault.digests.get(path)


def changed_on_disk(vault: Vault, exclude: Sequence[str], store: Path,
                    templates: bool = False) -> tuple[set[str], bool]:
    """The vault paths whose files differ from what `vault` holds, by a stat scan of the whole vault (no file
    read): notes whose size or mtime changed since they were last scanned, notes and attachments come or gone.
    True instead when the vault must be read whole: its symlinks, unreadable folders or ignore rules changed.
    The scan's stat data becomes the vault's."""
    rules, _issues = IgnoreRules.for_vault(vault.root, exclude, store, templates)
    scan = scan_files(vault.root, rules)
    if rules_changed(vault, rules) or scan.symlinks != vault.symlinks or scan.unreadable != vault.unreadable:
        return set(), True
    on_disk = {note.path: (note.size, note.mtime_ns) for note in scan.notes}
    changed = {path for path, stat_data in on_disk.items()
               if path not in vault.notes or vault.stats.get(path) != stat_data}
    changed.update(path for path in vault.notes if path not in on_disk)
    changed.update(set(scan.attachments) ^ vault.attachments)
    vault.stats = on_disk  # what the batch now reads: a file changed after this scan brings an event of its own
    return changed, False


def rules_changed(vault: Vault, rules: IgnoreRules) -> bool:
    """Whether `rules` (made now, from `--exclude`, `.obsidian/app.json` and the template settings) ignore other
    paths than those the vault was read with: then which notes count is the whole vault's to say, and it is read
    whole."""
    return rules.signature() != vault.rules.signature()
