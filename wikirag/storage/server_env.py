"""Whether LightRAG can take the connection of each server storage in use from the environment, said in one line
before a store is opened.

LightRAG's constructor raises a ValueError (a traceback under `index`, `query`, `search` and `watch`) when a
storage's required variables are unset (lightrag/kg/__init__.py STORAGE_ENV_REQUIREMENTS, checked with `var in
os.environ`: set empty counts as set, as there). A MILVUS_URI that names a local file is Milvus Lite, an embedded
database pymilvus opens in the process: wikirag passes Milvus through to a server only (its rebuild drops the
collection there, its ledger records the server), so such a URI is refused, before pymilvus is imported.
`doctor` shows the same lines as failed checks.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from wikirag.errors import ConfigError
from wikirag.storage.settings import REQUIREMENTS, StorageSettings, storage_family

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def server_storages(settings: StorageSettings) -> list[str]:
    """The pass-through server storage classes in use (PostgreSQL's are wikirag's own to connect)."""
    return sorted({c for c in settings.classes.values() if storage_family(c) not in {"file", "PG", "Faiss"}})


def server_env_problem(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """What keeps LightRAG's storage `name` from connecting, from the environment alone: the detail of
    doctor's check, which `require_server_env` says after the class name; None when nothing does."""
    environ = os.environ if environ is None else environ
    family = storage_family(name)
    unset = [var for var in REQUIREMENTS[family][2] if var not in environ]
    if unset:
        return f"set {', '.join(unset)} in the environment (read by LightRAG)"
    if family == "Milvus" and is_local_file(environ["MILVUS_URI"]):
        return (f"MILVUS_URI {environ['MILVUS_URI'].strip()!r} is a local file (Milvus Lite), which wikirag does not "
                "use: set it to a Milvus server's URI (http://host:19530)")
    return None


def is_local_file(uri: str) -> bool:
    """Whether a MILVUS_URI names a file (pymilvus opens a `.db` path as Milvus Lite) rather than a server."""
    value = uri.strip()
    if value.lower().startswith("file:"):
        return True
    if _SCHEME.match(value):
        return False
    return value.lower().endswith(".db") or value.startswith(("/", ".", "~")) or os.sep in value


def require_server_env(settings: StorageSettings, environ: Mapping[str, str] | None = None) -> None:
    """Raise ConfigError, in one line naming each storage and what it misses, before a store is opened."""
    problems: dict[str, list[str]] = {}  # the same problem of two storages (Redis for kv and doc_status) said once
    for name in server_storages(settings):
        if (problem := server_env_problem(name, environ)) is not None:
            problems.setdefault(problem, []).append(name)
    if problems:
        raise ConfigError("; ".join(f"{', '.join(names)}: {problem}" for problem, names in problems.items()))
