"""LightRAG's storage classes for the configured backend: constructor arguments, the environment variables
its server storages read (set only while an engine opens, and never a workspace override), and importing
the storage modules early with their expected start-up noise filtered.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

from wikirag.errors import ConfigError
from wikirag.lightrag.guard import import_lightrag
from wikirag.storage.settings import ROLE_KWARGS, WORKSPACE_OVERRIDES, StorageSettings, missing_packages


def lightrag_storage_kwargs(settings: StorageSettings) -> dict[str, str]:
    """`LightRAG(**lightrag_storage_kwargs(settings))`: the four storage class names."""
    return {ROLE_KWARGS[role]: name for role, name in settings.classes.items()}


def lightrag_env_vars(settings: StorageSettings) -> dict[str, str]:
    """The env vars LightRAG's storages read for these settings. Holds the password: never log it."""
    env = dict.fromkeys(WORKSPACE_OVERRIDES, "")
    if settings.uses_postgres:
        env.update({
            "POSTGRES_HOST": settings.host,
            "POSTGRES_PORT": str(settings.port),
            "POSTGRES_USER": settings.user,
            "POSTGRES_PASSWORD": settings.password,
            "POSTGRES_DATABASE": settings.database,
            "POSTGRES_MAX_CONNECTIONS": str(settings.max_connections),
            "POSTGRES_CONNECTION_RETRIES": str(max(1, settings.connection_retries)),
            "POSTGRES_CONNECTION_RETRY_BACKOFF": "1.0",
            "POSTGRES_CONNECTION_RETRY_BACKOFF_MAX": "5.0",
            "POSTGRES_SSL_MODE": "",  # see the module docstring: PGSSLMODE keeps libpq's meaning
        })
        if settings.sslmode:
            env["PGSSLMODE"] = settings.sslmode
    if settings.embedded:
        # No vector index unless asked for: an exact scan, as NanoVectorDB does, measured cheaper for a vault
        # than maintaining HNSW (half the first index's CPU at 1,000 notes), and never cut short by HNSW's
        # ef_search (40) below LightRAG's top_k (docs/storage.md). POSTGRES_VECTOR_INDEX_TYPE=HNSW restores it.
        env["POSTGRES_VECTOR_INDEX_TYPE"] = os.environ.get("POSTGRES_VECTOR_INDEX_TYPE", "")
    return env


_env_lock = threading.Lock()


_env_state: dict[str, Any] = {"count": 0, "vars": None, "saved": {}}


@contextlib.contextmanager
def lightrag_environment(settings: StorageSettings) -> Iterator[None]:
    """Set LightRAG's storage env vars for this process while an engine is open; restore them when the
    last engine closes.

    Nested or concurrent engines share the variables (a file-store engine beside a PostgreSQL one is fine);
    different PostgreSQL connection settings in one process are refused, because LightRAG's pool is
    process-wide and would silently keep the first."""
    wanted = lightrag_env_vars(settings)
    if settings.embedded:  # LightRAG's pool connects in initialize_storages: the private server must run
        from wikirag.storage.embedded import ensure_server

        ensure_server(settings)
    with _env_lock:
        active: dict[str, str] = _env_state["vars"] or {}
        if any(active.get(k, v) != v for k, v in wanted.items()):
            raise ConfigError("this process already has an engine open on other storage settings; "
                              "LightRAG shares one connection pool per process: close it first")
        saved: dict[str, str | None] = _env_state["saved"]
        for key, value in wanted.items():
            if key not in active:
                saved[key] = os.environ.get(key)
                os.environ[key] = value
        _env_state["vars"] = {**active, **wanted}
        _env_state["count"] += 1
    quiet = _ExpectedNoise()
    logging.getLogger("lightrag").addFilter(quiet)
    try:
        import_storage_modules(settings)
        yield
    finally:
        logging.getLogger("lightrag").removeFilter(quiet)
        with _env_lock:
            _env_state["count"] -= 1
            if _env_state["count"] == 0:
                for key, value in _env_state["saved"].items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value
                _env_state["vars"], _env_state["saved"] = None, {}


class _ExpectedNoise(logging.Filter):
    """Drops two LightRAG log lines that are expected under wikirag: the ERROR per missing table when a
    database is first used (PostgreSQLDB.check_tables probes with SELECT, then creates the table), and the
    WARNING that a new workspace's vector table is empty (wikirag checks the embedding model itself)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        probe = message.startswith('PostgreSQL database, error:relation "lightrag_') and "does not exist" in message
        return not (probe or "Ensure it is caused by new workspace setup" in message)


def import_storage_modules(settings: StorageSettings) -> None:
    """Import LightRAG's modules for these storages from a neutral folder: several (postgres_impl,
    neo4j_impl, networkx_impl) call `load_dotenv(".env")` at import, which would read the user's cwd."""
    import importlib
    import sys

    missing = missing_packages(settings)
    if missing:
        raise ConfigError(f"storage {settings.backend} needs {', '.join(missing)}: pip install {' '.join(missing)}")
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as neutral:
        os.chdir(neutral)
        try:
            import_lightrag()
            from lightrag.kg import STORAGES

            for name in settings.classes.values():
                module = "lightrag" + STORAGES[name]
                if module not in sys.modules:
                    importlib.import_module(module)
        finally:
            os.chdir(here)

