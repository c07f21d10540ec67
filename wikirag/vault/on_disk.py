"""Where a vault path is on disk: names compared in NFC (a vault written on macOS spells them in NFD), and of
two spellings of one name the file the scan keeps. And `walk_folders`, os.walk without its recursion."""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterator
from pathlib import Path


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def inside_folder(real: str, real_root: str) -> bool:
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


Listings = dict[str, tuple[list[str], list[str]]]  # folder on disk -> (its names, each in NFC)


def find_on_disk(root: Path, path: str, listings: Listings | None = None) -> str | None:
    """Where the scan finds vault path `path` (NFC) on disk; None when nowhere. A vault written on macOS spells
    names in NFD, and a folder may hold both spellings of a name, of which the scan keeps the first it meets:
    so of each part's spellings, files are tried in name order and folders real ones first, then symlinked ones,
    skipping what the scan skips (a link out of the vault; what is not a file, or not a folder). `listings`
    keeps the folders listed, for a caller finding several notes."""
    real_root = os.path.realpath(root)
    parts = path.split("/")
    listings = {} if listings is None else listings

    def rank(where: str, last: bool) -> int | None:  # the scan's order among spellings; None: passed over
        link = os.path.islink(where)
        if link and not inside_folder(os.path.realpath(where), real_root):
            return None
        if last:
            return 0 if os.path.isfile(where) else None
        return (1 if link else 0) if os.path.isdir(where) else None

    def spellings(folder: str, part: str) -> list[str]:
        if folder not in listings:
            try:
                names = os.listdir(folder)
            except OSError:
                names = []
            listings[folder] = names, [nfc(name) for name in names]
        names, keys = listings[folder]
        found, at = [], -1
        while (at := _index(keys, part, at + 1)) >= 0:
            found.append(names[at])
        return found

    def tried(folder: str, part: str, last: bool) -> Iterator[str]:
        # An ASCII name, there as a file or a real folder, comes first without listing the folder: any other
        # spelling of it holds a character past ASCII where they first differ (a Kelvin sign for K), so sorts after.
        first = part if part.isascii() and rank(os.path.join(folder, part), last) == 0 else None
        if first is not None:
            yield first
        ranked = [(rank(os.path.join(folder, name), last), name) for name in spellings(folder, part) if name != first]
        yield from (name for r, name in sorted((r, name) for r, name in ranked if r is not None))

    # Depth first, each part's spellings in turn (a folder that does not hold the rest: another spelling's may);
    # a stack, not a call per folder: a note under a thousand folders passed Python's recursion limit.
    last = len(parts) - 1
    stack = [(str(root), tried(str(root), parts[0], last == 0))]
    while stack:
        folder, names = stack[-1]
        name = next(names, None)
        if name is None:
            stack.pop()
            continue
        where = os.path.join(folder, name)
        if len(stack) - 1 == last:
            return where
        stack.append((where, tried(where, parts[len(stack)], len(stack) == last)))
    return None


def walk_folders(top: str | Path) -> Iterator[tuple[str, list[str], list[str]]]:
    """`os.walk(top)`, top down, with a stack instead of a call per folder: Python 3.11's os.walk recurses (3.12's
    does not), and a folder a thousand levels deep passed the recursion limit. As with os.walk, a symlinked
    folder is listed among the folders but not entered, pruning the folder names in place skips them, and a
    folder that cannot be listed is passed over."""
    stack = [os.fspath(top)]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except OSError:
            continue
        dirnames, filenames = [], []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirnames if is_dir else filenames).append(entry.name)
        yield folder, dirnames, filenames
        subfolders = (os.path.join(folder, name) for name in reversed(dirnames))  # popped in os.walk's order
        stack.extend(path for path in subfolders if not os.path.islink(path))


def _index(items: list[str], item: str, start: int) -> int:
    try:
        return items.index(item, start)
    except ValueError:
        return -1
