"""The symlinks a scan met inside the vault, and the vault paths each real path is read under (for `watch`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property


@dataclass
@dataclass
class Symlinks:
    """The symlinks a scan met that lead inside the vault, for `watch`: a file-system event names the real
    path that changed (real/Target.md), never the link the vault reads it under (Shortcut.md). Vault paths
    here are spelled as on disk, as event paths are; real paths are os.path.realpath's."""

    paths: set[str] = field(default_factory=set)  # every such symlink
    files: dict[str, list[str]] = field(default_factory=dict)  # real path of a linked file -> the links to it
    folders: dict[str, str] = field(default_factory=dict)  # real path of a folder walked through a link -> its path
    targets: set[str] = field(default_factory=set)  # real paths of folder links' targets (and broken links')

    def vault_paths(self, real: str) -> list[str]:
        """The vault paths under which the scan read what is at `real` (or what lay below it) through a link."""
        out = list(self._file_links.get(real, ()))
        parent, name = os.path.split(real)
        if parent in self.folders:
            out.append(f"{self.folders[parent]}/{name}")
        return out

    def relinks(self, real: str) -> bool:
        """Whether a change at `real` can change which folders the scan walks through a link: it is, or holds,
        a folder link's target (made, removed or moved, the target decides whether and where the link is walked)."""
        return real in self._target_folders

    def touches(self, path: str) -> bool:
        """Whether vault path `path` (as on disk) is one of the links, or a folder holding one."""
        return path in self._link_folders

    @cached_property
    def _file_links(self) -> dict[str, list[str]]:
        # A linked file's folder moved or removed changes what the link reads as much as the file itself does.
        out: dict[str, list[str]] = {}
        for real, links in self.files.items():
            for place in _and_above(real):
                out.setdefault(place, []).extend(links)
        return out

    @cached_property
    def _target_folders(self) -> set[str]:
        return {place for target in self.targets for place in _and_above(target)}

    @cached_property
    def _link_folders(self) -> set[str]:
        return {place for link in self.paths for place in _and_above(link, "/")}


def _and_above(path: str, sep: str = os.sep) -> list[str]:
    """`path` and every folder above it ("a/b/c" -> "a/b/c", "a/b", "a")."""
    out = [path]
    while (cut := path.rfind(sep)) > 0:
        path = path[:cut]
        out.append(path)
    return out
