"""Where a store may be: never among the user's notes, never where a vault's own settings could aim it away.

`settings.load_config` asks before anything is written; a `--rebuild` deletes only inside a store it allowed.
"""

from __future__ import annotations

from pathlib import Path

from wikirag.errors import ConfigError


def check_store_location(vault: Path, store: Path, workspace: str, origin: str, *, vault_file: bool = False) -> None:
    """Refuse a store that would put wikirag's files, or a `--rebuild`, among the user's notes.

    The store may not be the vault, hold the vault, or be a visible folder inside it (Obsidian shows and
    syncs those; the default `.wikirag` is hidden). A store named by the vault's own wikirag.toml must stay
    inside the vault: a shared or synced vault must not be able to point wikirag anywhere else.
    """
    vault_dir, store_dir = vault.resolve(), store.resolve()
    workspace_dir = (store / workspace).resolve()
    for folder in (store_dir, workspace_dir):
        if folder.exists() and not folder.is_dir():
            raise ConfigError(f"{origin}: store {folder} is a file, not a folder (the store is the folder the "
                              "index lives in)")
    if vault_dir.is_relative_to(store_dir):
        raise ConfigError(f"{origin}: store {store} is the vault or a folder holding it; "
                          "use a folder of its own (default: VAULT/.wikirag)")
    if not workspace_dir.is_relative_to(store_dir) or workspace_dir == store_dir:
        raise ConfigError(f"{origin}: workspace folder {workspace_dir} is not inside the store {store_dir}")
    if store_dir.is_relative_to(vault_dir):
        inside = store_dir.relative_to(vault_dir).parts
        if not any(part.startswith(".") for part in inside):
            raise ConfigError(f"{origin}: store {store} is a visible folder of the vault, among the notes; "
                              "use a hidden one such as .wikirag, or a folder outside the vault")
    elif vault_file:
        raise ConfigError(f"{origin}: store {store} is outside the vault; a vault's own wikirag.toml may only name "
                          "a folder inside it (use --store or WIKIRAG_STORE for another place)")
