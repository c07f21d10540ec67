"""A workspace's name: one folder inside the store (and a row prefix on servers), never a path."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
from pathlib import Path

from wikirag.errors import ConfigError
from wikirag.storage.fs import KEPT_ACROSS_REBUILD, VAULT_RECORD, atomic_write_text, is_store_file


def workspace_name(vault: Path) -> str:
    """A LightRAG workspace name for a vault: its folder name, made safe as one path component."""
    name = re.sub(r"[^\w.-]+", "_", vault.resolve().name, flags=re.UNICODE).strip("._") or "vault"
    return name


def vault_workspace(vault: Path, store: Path, *, own_store: bool) -> str:
    """The default workspace: the vault's folder name, or the index its folder had before a rename. When the
    vault's own store (inside the vault: the default `VAULT/.wikirag`, or a `store` its wikirag.toml names) holds
    no workspace of the folder's name and exactly one other, written for this vault on this machine at a path
    now gone (`record_vault`), that index moved with the vault and is kept, not built again beside it. A store
    from outside (`--store`, WIKIRAG_STORE, a `--config` file's, a `.wikirag` linked out) may hold other vaults'
    indexes, and a store synced from another machine that machine's: none of those is taken."""
    name = workspace_name(vault)
    if not own_store:
        return name
    entries = _own_store_entries(vault, store)
    if any(c.name == name for c in entries):
        return name
    built = _indexes(entries)
    if len(built) == 1 and _WORKSPACE_NAME.fullmatch(built[0].name) and _left_by(built[0], vault):
        return built[0].name
    return name


def record_vault(workspace_dir: Path, vault: Path) -> None:
    """Note in the workspace folder which vault, on which machine, its index is written for (a writer calls
    this under its lock); `vault_workspace` reads it after a rename."""
    record = json.dumps({"host": socket.gethostname(), "path": str(vault.resolve())})
    path = workspace_dir / VAULT_RECORD
    with contextlib.suppress(OSError):  # only a hint for a later rename: a run never fails for it
        if workspace_dir.is_dir() and (not path.is_file() or path.read_text(encoding="utf-8") != record):
            atomic_write_text(path, record)


def _left_by(folder: Path, vault: Path) -> bool:
    """Whether the index in `folder` was written for this vault before its folder was renamed: on this machine,
    at a path now gone (or this very folder under another spelling: a case-only rename on macOS)."""
    try:
        record = json.loads((folder / VAULT_RECORD).read_text(encoding="utf-8"))
        if record.get("host") != socket.gethostname():
            return False  # a store synced from another machine, whose vault folder is named otherwise
        old = Path(record["path"])
        return not old.exists() or os.path.samefile(old, vault)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def other_workspaces(vault: Path, store: Path, workspace: str) -> list[str]:
    """The indexes a vault's own store (one inside the vault) holds besides `workspace`: left there when the
    vault folder was renamed while the store held another (or by an older wikirag, which kept none)."""
    return sorted(c.name for c in _indexes(_own_store_entries(vault, store)) if c.name != workspace)


def _own_store_entries(vault: Path, store: Path) -> list[Path]:
    """What a store inside the vault holds; nothing for a store outside it (several vaults may share that one:
    the others' indexes are theirs), none yet, or one that cannot be read (the checks that follow say so)."""
    try:
        return list(store.iterdir()) if store.resolve().is_relative_to(vault.resolve()) else []
    except OSError:
        return []


def _indexes(entries: list[Path]) -> list[Path]:
    """The folders among `entries` that hold an index (none when one of them cannot be read)."""
    try:
        return [c for c in entries if c.is_dir() and not c.is_symlink() and _holds_index(c)]
    except OSError:
        return []


def _holds_index(folder: Path) -> bool:
    """Any file wikirag writes there, what a rebuild keeps included: a `--rebuild` cut short (or not yet at its
    first save) leaves its marker, the vector cache and the LLM cache, and no ledger."""
    return any(is_store_file(c) or c.name in KEPT_ACROSS_REBUILD for c in folder.iterdir())


_WORKSPACE_NAME = re.compile(r"[\w.-]+")


def check_workspace_name(name: str, origin: str) -> str:
    """A workspace names one folder inside the store (and a row prefix on servers): never a path."""
    if not _WORKSPACE_NAME.fullmatch(name) or name in {".", ".."}:
        raise ConfigError(f"{origin}: workspace {name!r} must be one folder name (letters, digits, '_', '-', '.'), "
                          "not a path, '.' or '..'")
    return name
