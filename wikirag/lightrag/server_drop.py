"""`--rebuild` on the servers LightRAG's storages are passed through to (Redis, MongoDB, Neo4j, Memgraph, Qdrant,
Milvus, OpenSearch): each storage's own `drop()` empties this workspace there. wikirag deletes its files and its
PostgreSQL rows itself (storage.fs, storage.ledger_store); without this, what an earlier index wrote to such a
server stayed and the rebuilt index read it as its own.

Each 1.5.7 `drop()` was read in lightrag/kg/*_impl.py: it removes this workspace's data only (Redis keys, MongoDB
collections, Neo4j and Memgraph nodes by label, Qdrant points by payload, a Milvus collection, OpenSearch
indexes), with two caveats of LightRAG's naming that docs/storage.md ("Rebuilding on a server") states: OpenSearch
index names are lower-cased, and Qdrant's also clears the older collection LightRAG would copy into the workspace.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Iterator
from typing import Any

from wikirag.errors import WikiragError
from wikirag.lightrag.engine import open_engine
from wikirag.redaction import redact
from wikirag.settings import WikiragConfig
from wikirag.storage.postgres import StorageUnreachable
from wikirag.storage.server_targets import DATABASE_VARS, target_form
from wikirag.storage.settings import TARGET_VARS, StorageSettings, storage_family

# LightRAG's storages per role (LightRAG.__post_init__), in the order its own "clear documents" drops them.
ROLE_STORAGES = {
    "kv": ("text_chunks", "full_docs", "full_entities", "full_relations", "entity_chunks", "relation_chunks",
           "llm_response_cache"),
    "vector": ("entities_vdb", "relationships_vdb", "chunks_vdb"),
    "graph": ("chunk_entity_relation_graph",),
    "doc_status": ("doc_status",),
}


# Extraction answers already paid for: kept by `--rebuild` unless `--drop-llm-cache`, as on files and PostgreSQL.
LLM_CACHE_STORAGE = "llm_response_cache"


def server_storages(settings: StorageSettings, *, keep_llm_cache: bool) -> list[tuple[str, str]]:
    """(role, storage attribute) of every LightRAG storage these settings put on a pass-through server."""
    return [(role, name) for role, names in ROLE_STORAGES.items()
            if storage_family(settings.classes[role]) in TARGET_VARS
            for name in names if not (keep_llm_cache and name == LLM_CACHE_STORAGE)]


async def drop_server_storages(config: WikiragConfig, *, keep_llm_cache: bool, embedding_func: Any = None) -> list[str]:
    """Empty this workspace in every storage the settings put on a pass-through server (`server_storages`), with
    LightRAG's own `drop()`; returns the storages emptied. A storage that cannot be reached or refuses raises
    StorageUnreachable in one line naming the server (no credential, no traceback); the ones before it are
    already empty, and running the drop again is harmless. `embedding_func` replaces the configured model, as it
    does for `open_engine`: the run's own, since Qdrant's and Milvus's collections are named for the model."""
    wanted = server_storages(config.storage, keep_llm_cache=keep_llm_cache)
    if not wanted:
        return []
    dropped = []
    async with open_engine(config, reading=(), embedding_func=embedding_func) as rag:  # builds them, opens none
        for role, name in wanted:
            storage = getattr(rag, name)
            with _failures_reported_by_us():
                try:
                    await storage.initialize()
                    try:
                        result = await storage.drop()
                    finally:
                        await storage.finalize()
                except WikiragError:
                    raise
                except Exception as exc:  # noqa: BLE001  (any driver's error: said in one line below)
                    result = {"status": "error", "message": f"{type(exc).__name__}: {exc}"}
            if isinstance(result, dict) and result.get("status") != "success":  # how most drop()s say they failed
                raise StorageUnreachable(_could_not_empty(config, role, name, str(result.get("message") or "")))
            dropped.append(name)
    return dropped


def _could_not_empty(config: WikiragConfig, role: str, name: str, reason: str) -> str:
    """One line: the store, the storage, the server (credentials cut, as the ledger records it), why."""
    family = storage_family(config.storage.classes[role])
    targets = dict(config.storage.servers)
    named = [f"database {targets[var]}" if var in DATABASE_VARS else targets[var]
             for var in TARGET_VARS[family] if var in targets]
    where = ", ".join(named) if named else f"LightRAG's default ({TARGET_VARS[family][0]} unset)"
    why = _without_credentials(reason.strip().splitlines()[0] if reason.strip() else "no reason given", family)
    return (f"{config.workspace_dir}: --rebuild could not empty LightRAG's {name} ({config.storage.classes[role]}) "
            f"on {family.lower()} {where}: {why}; the next `wikirag index` finishes the rebuild")


_USERINFO = re.compile(r"[^\s/@:,'\"]*:[^\s/@,'\"]+@(?=[\w\[])")  # user:password@host, with or without a scheme


def _without_credentials(reason: str, family: str) -> str:
    """A driver's reason, which may quote the server's variable whole: that value in its recorded form (credentials
    cut), any other user:password@ cut, and API keys and secret variables' values redacted (redaction.redact)."""
    for var in TARGET_VARS[family]:
        raw = os.environ.get(var, "").strip()
        if raw:
            reason = reason.replace(raw, target_form(var, raw))
    return redact(_USERINFO.sub("", reason))[:300]


@contextlib.contextmanager
def _failures_reported_by_us() -> Iterator[None]:
    """LightRAG logs a failed drop at ERROR, unredacted, then returns it: wikirag reports it once, redacted."""
    def drop_errors(record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR

    logger = logging.getLogger("lightrag")
    logger.addFilter(drop_errors)
    try:
        yield
    finally:
        logger.removeFilter(drop_errors)
