"""A content-hash vector cache: each distinct text is embedded once per store and model.

LightRAG embeds every chunk, entity and relation it writes, and wikirag rewrites records whenever a note
they derive from changes: a rename, a `--rebuild`, or a relation re-derived with the same description
would embed the same text again (≈14 texts/s with MiniLM on two cores). The wrapper looks each text up by
sha1 in `wikirag_vectors.sqlite` in the workspace folder (rows keyed by the embedding's identity and the
text's digest, the float32 vector as a blob) and embeds only the misses.

The file survives `index --rebuild` on purpose: a vector depends only on the text and the model, both in
its key, so keeping it is what makes a rebuild cheap. `VECTOR_CACHE_VERSION` is part of the key: bump it
when the embedder's output changes under the same model name. Deleting the file is always safe.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import sqlite3
import threading
from pathlib import Path
from typing import Any

import numpy as np

VECTOR_CACHE_FILENAME = "wikirag_vectors.sqlite"
VECTOR_CACHE_VERSION = 1
_LOOKUP_CHUNK = 500  # SQLite's default limit on bound parameters is 999


class VectorCache:
    """sha1(text) -> vector for one embedding identity, in SQLite (WAL; a lost tail only costs re-embedding)."""

    def __init__(self, path: Path, identity: str, dim: int) -> None:
        self.path = Path(path)
        self.model = f"v{VECTOR_CACHE_VERSION}:{identity}:{dim}"
        self.dim = dim
        self.hits = 0
        self.misses = 0
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA journal_size_limit=16777216")  # keep the WAL small after big batches
            conn.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, key BLOB NOT NULL, "
                         "vector BLOB NOT NULL, PRIMARY KEY (model, key)) WITHOUT ROWID")
            self._conn = conn
        return self._conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @staticmethod
    def key(text: str, context: str = "") -> bytes:
        return hashlib.sha1(f"{context}\0{text}".encode("utf-8", "surrogatepass")).digest()

    def get_many(self, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            conn = self._db()
            for start in range(0, len(keys), _LOOKUP_CHUNK):
                part = keys[start : start + _LOOKUP_CHUNK]
                rows = conn.execute(f"SELECT key, vector FROM vectors WHERE model = ? AND key IN "
                                    f"({','.join('?' * len(part))})", (self.model, *part)).fetchall()
                for key, blob in rows:
                    vector = np.frombuffer(blob, dtype=np.float32)
                    if vector.size == self.dim:  # anything else is damage: embed again
                        found[key] = vector
        return found

    def put_many(self, items: dict[bytes, np.ndarray]) -> None:
        with self._lock:
            conn = self._db()
            conn.execute("BEGIN")
            conn.executemany("INSERT OR REPLACE INTO vectors (model, key, vector) VALUES (?, ?, ?)",
                             [(self.model, k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()])
            conn.execute("COMMIT")

    def wrap(self, embed: Any) -> Any:
        """An async `embed(texts, **kwargs)` that asks `embed` only for texts not cached (each once)."""

        async def cached(texts: list[str], **kwargs: Any) -> np.ndarray:
            texts = list(texts)
            context = str(kwargs.get("context") or "")
            keys = [self.key(t, context) for t in texts]
            try:
                found = self.get_many(sorted(set(keys)))
            except sqlite3.Error:
                found = {}  # an unreadable cache is no cache
            missing: dict[bytes, str] = {}
            for key, text in zip(keys, texts, strict=True):
                if key not in found and key not in missing:
                    missing[key] = text
            self.hits += len(texts) - sum(1 for k in keys if k in missing)
            if missing:
                self.misses += len(missing)
                vectors = np.asarray(await embed(list(missing.values()), **kwargs), dtype=np.float32)
                fresh = dict(zip(missing, vectors.reshape(len(missing), -1), strict=True))
                with contextlib.suppress(sqlite3.Error):  # only a cache
                    self.put_many(fresh)
                found.update(fresh)
            return np.stack([found[k] for k in keys]) if keys else np.zeros((0, self.dim), dtype=np.float32)

        return cached


def cached_embedding_func(embedding_func: Any, workspace_dir: Path, identity: str) -> tuple[Any, VectorCache]:
    """The same LightRAG EmbeddingFunc, its function behind a VectorCache in `workspace_dir`."""
    cache = VectorCache(Path(workspace_dir) / VECTOR_CACHE_FILENAME, identity, embedding_func.embedding_dim)
    return dataclasses.replace(embedding_func, func=cache.wrap(embedding_func.func)), cache
