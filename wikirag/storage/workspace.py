"""A workspace's name: one folder inside the store (and a row prefix on servers), never a path."""

from __future__ import annotations

import re
from pathlib import Path

from wikirag.errors import ConfigError


def workspace_name(vault: Path) -> str:
    """A LightRAG workspace name for a vault: its folder name, made safe as one path component."""
    name = re.sub(r"[^\w.-]+", "_", vault.resolve().name, flags=re.UNICODE).strip("._") or "vault"
    return name


_WORKSPACE_NAME = re.compile(r"[\w.-]+")


def check_workspace_name(name: str, origin: str) -> str:
    """A workspace names one folder inside the store (and a row prefix on servers): never a path."""
    if not _WORKSPACE_NAME.fullmatch(name) or name in {".", ".."}:
        raise ConfigError(f"{origin}: workspace {name!r} must be one folder name (letters, digits, '_', '-', '.'), "
                          "not a path, '.' or '..'")
    return name
