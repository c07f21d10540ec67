"""One writer per workspace: a file lock in the workspace folder, or a PostgreSQL advisory lock when the
index lives there. A second `index` or `watch` gets a clear message instead of waiting.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from wikirag.errors import StoreLocked, StoreUnusable
from wikirag.storage.fs import LOCK_FILENAME
from wikirag.storage.postgres import connect
from wikirag.storage.settings import StorageSettings


class FileWriterLock:
    """A filelock in the workspace folder: one writer per workspace on this machine."""

    def __init__(self, workspace_dir: Path) -> None:
        from filelock import FileLock

        try:
            Path(workspace_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file in the way, a read-only place, a name too long: one line, not a traceback
            raise StoreUnusable(f"{workspace_dir}: cannot make the store folder ({exc.strerror or exc})") from None
        self._path = Path(workspace_dir) / LOCK_FILENAME
        self._lock = FileLock(str(self._path), timeout=0)

    def __enter__(self) -> FileWriterLock:
        from filelock import Timeout

        try:
            self._lock.acquire()
        except Timeout:
            raise StoreLocked(
                f"{self._path.parent}: another wikirag process (index or watch) is writing this store"
            ) from None
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


class PostgresWriterLock:
    """`pg_try_advisory_lock(hashtext('wikirag:' || workspace))` on a connection of its own, held while the
    context is open: one writer per workspace across every machine using the database. The server
    releases it if the holder's connection dies, so a crashed writer never leaves a stale lock.
    (LightRAG's pool runs pg_advisory_unlock_all() when it recycles a connection: hence our own one.)"""

    def __init__(self, settings: StorageSettings, workspace: str) -> None:
        self.settings, self.workspace = settings, workspace
        self._conn: Any = None

    def __enter__(self) -> PostgresWriterLock:
        conn = connect(self.settings, autocommit=True)
        try:
            got = conn.execute("SELECT pg_try_advisory_lock(hashtext('wikirag:' || %s))",
                               (self.workspace,)).fetchone()[0]
        except BaseException:
            conn.close()
            raise
        if not got:
            conn.close()
            raise StoreLocked(f"{self.settings.target}: another wikirag process (index or watch) is writing "
                              f"workspace {self.workspace!r}")
        self._conn = conn
        return self

    def __exit__(self, *exc: object) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # a dead connection has released the lock already
                conn.execute("SELECT pg_advisory_unlock(hashtext('wikirag:' || %s))", (self.workspace,))
            conn.close()


def writer_lock(settings: StorageSettings, workspace_dir: Path, workspace: str) -> FileWriterLock | PostgresWriterLock:
    """The lock that keeps a second `index`/`watch` off this workspace, wherever its data lives."""
    if settings.uses_postgres:
        return PostgresWriterLock(settings, workspace)
    return FileWriterLock(workspace_dir)

