"""A workspace's name: one folder inside the store (and a row prefix on servers), never a path."""

from __future__ import annotations

import re
from pathlib import Path

from wikirag.errors import ConfigError
from wikirag.storage.fs import KEPT_ACROSS_REBUILD, is_store_file


def workspace_name(vault: Path) -> str:
    """A LightRAG workspace name for a vault: its folder name, made safe as one path component."""
    name = re.sub(r"[^\w.-]+", "_", vault.resolve().name, flags=re.UNICODE).strip("._") or "vault"
    return name


def vault_workspace(vault: Path, store: Path, *, own_store: bool) -> str:
    """The default workspace: the vault's folder name. In a store that is the vault's own (the default
    `VAULT/.wikirag`, or a `store` its wikirag.toml names inside it), unless that store holds no workspace of
    that name and exactly one of another: the vault folder was renamed and its store moved with it, so that
    index is this vault's, kept rather than built again (every note re-embedded) beside it. A store given
    from outside (`--store`, WIKIRAG_STORE), or one that lies outside the vault once links are followed (a
    `--config` file's, a `.wikirag` linked out) may hold other vaults' workspaces: none is taken."""
    name = workspace_name(vault)
    if not own_store or (store / name).exists():
        return name
    try:
        if not store.resolve().is_relative_to(vault.resolve()):
            return name  # `--config` naming a store elsewhere, or `.wikirag` a link out: other vaults' indexes
        built = [c.name for c in store.iterdir() if c.is_dir() and not c.is_symlink() and _holds_index(c)]
    except OSError:  # no store yet, or unreadable: the checks that follow say so
        return name
    return built[0] if len(built) == 1 and _WORKSPACE_NAME.fullmatch(built[0]) else name


def other_workspaces(vault: Path, store: Path, workspace: str) -> list[str]:
    """The indexes a vault's own store (one inside the vault) holds besides `workspace`: left there when the
    vault folder was renamed while the store held another (or by an older wikirag, which kept none)."""
    try:
        if not store.resolve().is_relative_to(vault.resolve()):
            return []  # a store shared by several vaults: the others are theirs
        return sorted(c.name for c in store.iterdir()
                      if c.name != workspace and c.is_dir() and not c.is_symlink() and _holds_index(c))
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
