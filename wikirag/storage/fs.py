"""File-system helpers for the store folder: atomic writes, and the by-name list of files wikirag and
LightRAG write there (all that `--rebuild` may delete).
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import tempfile
from pathlib import Path

LEDGER_FILENAME = "wikirag_ledger.json"
INDEX_DB_FILENAME = "wikirag_index.sqlite"  # ledger rows, parse cache, manifest (storage.sqlite_store)


LOCK_FILENAME = "wikirag.lock"


# What a store folder may hold that wikirag or LightRAG wrote, by name: LightRAG's KV, vector and graph files,
# wikirag's own JSON files, and the temp files of interrupted atomic writes. `--rebuild` deletes these and
# nothing else, so a store pointed at the wrong folder can never take a user's file with it.
STORE_FILE_PATTERNS = (
    "kv_store_*.json", "vdb_*.json", "graph_chunk_entity_relation.graphml", "wikirag_*.json", "wikirag_*.jsonl",
    INDEX_DB_FILENAME, f"{INDEX_DB_FILENAME}-wal", f"{INDEX_DB_FILENAME}-shm", "wikirag_lexical.npz",
    ".kv_store_*.tmp", ".vdb_*.tmp", ".wikirag_*.tmp",
)


# Ours too, but kept by `--rebuild`: the content-hash vector cache (lightrag.vector_cache). A vector depends
# only on its text and the model, both in its key, so a rebuild re-embeds nothing it already has.
# The embedded PostgreSQL's data folder, its start/stop lock and its list of client processes
# (storage/embedded.py) are kept too: a rebuild deletes the workspace's rows, as on any PostgreSQL.
PGDATA_DIRNAME = "wikirag_pgdata"


# Which vault on which machine the workspace's index was written for (storage.workspace): a rebuild keeps it, so
# a vault renamed while its rebuild was cut short still finds its index.
VAULT_RECORD = "wikirag_vault.info"


KEPT_ACROSS_REBUILD = ("wikirag_vectors.sqlite", "wikirag_vectors.sqlite-wal", "wikirag_vectors.sqlite-shm",
                       PGDATA_DIRNAME, f"{PGDATA_DIRNAME}.lock", f"{PGDATA_DIRNAME}.clients", VAULT_RECORD)


def is_store_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink() and any(fnmatch.fnmatchcase(path.name, p)
                                                           for p in STORE_FILE_PATTERNS)


# LightRAG's LLM cache file and wikirag's journal of answers not yet in it (lightrag/answers.py): paid for.
# `--rebuild` keeps them unless asked to drop them.
LLM_CACHE_FILES = ("kv_store_llm_response_cache.json", "wikirag_llm_journal.jsonl")


def wipe_store_files(workspace_dir: Path, keep: tuple[str, ...] = ()) -> list[Path]:
    """Delete the files wikirag and LightRAG keep in a workspace folder, except those named in `keep`; return
    what else is there (kept)."""
    kept = []
    if not workspace_dir.is_dir():
        return kept
    # wikirag's own database first (ledger, manifest, parse cache): a wipe cut short then leaves LightRAG files
    # that the next run writes over, never a ledger that claims records already deleted
    for child in sorted(workspace_dir.iterdir(), key=lambda c: (not c.name.startswith(INDEX_DB_FILENAME), c.name)):
        if child.name in keep:
            continue
        if is_store_file(child):
            child.unlink()
        elif child.name != LOCK_FILENAME and child.name not in KEPT_ACROSS_REBUILD:
            kept.append(child)
    return kept


def atomic_write_text(path: Path, text: str) -> None:
    """Write a file so that readers and crashes only ever see the old or the new whole content."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, payload: bytes, *, durable: bool = True, mode: int | None = None) -> None:
    """Write a file so that readers and crashes only ever see the old or the new whole content. `durable=False`
    skips the fsyncs, for a derived file whose loss after a machine crash only costs rebuilding it. The file
    is private to the user (0600) unless `mode` says otherwise."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        if mode is not None:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as out:
            out.write(payload)
            if durable:
                out.flush()
                os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if not durable:
        return
    with contextlib.suppress(OSError):  # make the rename itself durable (POSIX; not possible on Windows)
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

